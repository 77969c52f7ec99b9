package cluster

import (
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// A victim's allot.preempted-by holds opaque references to its
// preemptors (jobmeta.Sealer.Ref), so its tenant does not learn another
// tenant's job names. The store, which sees every job, maps them back to
// "ns/id" for the engine; a reference to a job it does not know stays as
// it is and matches no job.

// convert converts stored job j, trusting its record when the seal
// holds and resolving its preemptor references, and its verified pin.
// Called with s.mu held.
func (s *Store) convert(j *api.Job) (*engine.Job, jobmeta.Pin) {
	rec, _ := s.sealer.Verify(j)
	s.noteRef(str(j.Namespace, api.DefaultNamespace) + "/" + str(j.ID, ""))
	for i, v := range rec.PreemptedBy {
		if key, ok := s.refs[v]; ok {
			rec.PreemptedBy[i] = key
		}
	}
	return convertJob(j, rec, s.tokens), rec.Pin
}

// noteRef remembers the reference of job key. The map is rebuilt from the
// jobs it holds when it grows well beyond them (jobs come and go).
func (s *Store) noteRef(key string) {
	ref := s.sealer.Ref(key)
	if ref == "" {
		return
	}
	if s.refs == nil || len(s.refs) > 2*len(s.jobs)+1024 {
		s.refs = make(map[string]string, len(s.jobs)+1)
		for k := range s.jobs {
			s.refs[s.sealer.Ref(k)] = k
		}
	}
	s.refs[ref] = key
}

// noteRefs remembers the references of a listing's jobs before any is
// converted, so a victim listed before its preemptor resolves too.
func (s *Store) noteRefs(jobs []*api.Job) {
	for _, j := range jobs {
		s.noteRef(str(j.Namespace, api.DefaultNamespace) + "/" + str(j.ID, ""))
	}
}
