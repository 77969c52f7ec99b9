package server

import (
	"net/http"
	"sort"

	gapi "github.com/allot-sh/allot/governor/api"
	"github.com/allot-sh/allot/governor/reconcile"
)

// classes serves GET /allot/v1/classes: the configured priority classes,
// highest priority first (then by name).
func (s *Server) classes(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeErr(w, http.StatusMethodNotAllowed, "only GET")
		return
	}
	out := gapi.ClassList{Classes: []gapi.Class{}}
	for name, c := range s.Classes {
		out.Classes = append(out.Classes, gapi.Class{Name: name, Priority: c.Priority, Preemptible: c.Preemptible, Restricted: c.Restricted})
	}
	sort.Slice(out.Classes, func(i, j int) bool {
		a, b := out.Classes[i], out.Classes[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Name < b.Name
	})
	writeJSON(w, http.StatusOK, out)
}

// decisions serves GET /allot/v1/decisions: recent preemptions, requeues
// and holds, newest first. A caller sees a record when it may read the
// namespace of its job or of one of its victims; victims in namespaces it
// may not read show as "(hidden)".
func (s *Server) decisions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeErr(w, http.StatusMethodNotAllowed, "only GET")
		return
	}
	vis, err := s.Visible(r)
	if err != nil {
		writeErr(w, http.StatusForbidden, "checking the namespaces your token may read: "+err.Error())
		return
	}
	out := gapi.DecisionList{Decisions: []gapi.Decision{}}
	if s.Journal != nil {
		for _, rec := range s.Journal.Recent() {
			if d, ok := decisionOf(rec, vis); ok {
				out.Decisions = append(out.Decisions, d)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func decisionOf(rec reconcile.Record, vis map[string]bool) (gapi.Decision, bool) {
	d := gapi.Decision{Time: rec.Time, Kind: rec.Kind, Namespace: rec.Namespace, JobID: rec.JobID, Class: rec.Class,
		Cause: rec.Cause, Reason: rec.Reason}
	seen := canSee(vis, rec.Namespace)
	for _, v := range rec.Victims {
		gv := gapi.Victim{Namespace: v.Namespace, JobID: v.JobID, Class: v.Class, LostWorkSeconds: v.LostWork.Seconds()}
		if canSee(vis, v.Namespace) {
			seen = true
		} else {
			gv.JobID, gv.Class = "(hidden)", ""
		}
		d.Victims = append(d.Victims, gv)
	}
	if !canSee(vis, rec.Namespace) {
		d.JobID, d.Reason = "(hidden)", "(hidden)"
	}
	return d, seen
}
