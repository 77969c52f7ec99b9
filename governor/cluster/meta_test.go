package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

var metaNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func testSealer(t *testing.T) *jobmeta.Sealer {
	t.Helper()
	s, err := jobmeta.NewSealer([]byte("cluster-test-key-cluster-test-key"))
	must.NoError(t, err)
	return s
}

// sealedJob returns a batch job the governor wrote at metaNow with write,
// as Nomad stores it.
func sealedJob(t *testing.T, s *jobmeta.Sealer, id string, write func(*api.Job) error) *api.Job {
	t.Helper()
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace = pointerTo("ml")
	j.JobModifyIndex = pointerTo(uint64(10))
	must.NoError(t, write(j))
	j.SubmitTime = pointerTo(metaNow.UnixNano())
	return j
}

func TestConvertStoredReadsOnlySealedRecords(t *testing.T) {
	s := testSealer(t)
	at := metaNow.Add(-time.Hour)
	victim := jobmeta.Record{State: jobmeta.StateAdmitted, QueuedAt: at, Requeues: 3, RequeuedAt: at, PreemptedBy: []string{"b/boss", "b/other"}}
	cases := map[string]struct {
		job  func(t *testing.T) *api.Job
		want engine.Job
	}{
		"requeued victim": {
			job: func(t *testing.T) *api.Job {
				return sealedJob(t, s, "j", func(j *api.Job) error { return s.Requeue(j, victim, "b/third", jobmeta.Stamp{Now: metaNow}) })
			},
			want: engine.Job{State: engine.Queued, QueuedAt: at, Requeues: 4, RequeuedAt: metaNow, PreemptedBy: refs(s, "b/boss", "b/other", "b/third")},
		},
		"admitted": {
			job: func(t *testing.T) *api.Job {
				return sealedJob(t, s, "j", func(j *api.Job) error { return s.Admit(j, victim, jobmeta.Stamp{Now: metaNow}) })
			},
			want: engine.Job{State: engine.Admitted, QueuedAt: at, AdmittedAt: metaNow, Requeues: 3, RequeuedAt: at, PreemptedBy: refs(s, "b/boss", "b/other")},
		},
		"forged admitted meta is a direct job (audit #11)": {
			job: func(*testing.T) *api.Job {
				j := api.NewBatchJob("j", "j", "global", 50)
				j.Meta = map[string]string{jobmeta.State: jobmeta.StateAdmitted, jobmeta.AdmittedAt: at.Format(time.RFC3339),
					jobmeta.Requeues: "3", jobmeta.PreemptedBy: "b/boss"}
				j.SubmitTime = pointerTo(metaNow.UnixNano())
				return j
			},
			want: engine.Job{State: engine.Direct},
		},
		"forged held meta is a user's stop (audit #8)": {
			job: func(*testing.T) *api.Job {
				j := api.NewBatchJob("j", "j", "global", 50)
				j.Stop = pointerTo(true)
				j.Meta = map[string]string{jobmeta.State: jobmeta.StateQueued, jobmeta.QueuedAt: "2000-01-01T00:00:00Z"}
				return j
			},
			want: engine.Job{State: engine.Stopped},
		},
		"an admitted job scaled straight to Nomad is direct": {
			job: func(t *testing.T) *api.Job {
				j := sealedJob(t, s, "j", func(j *api.Job) error { return s.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
				j.TaskGroups = []*api.TaskGroup{api.NewTaskGroup("g", 8)}
				return j
			},
			want: engine.Job{State: engine.Direct},
		},
		"allot.gang false is not a gang": {
			job: func(*testing.T) *api.Job {
				j := api.NewBatchJob("j", "j", "global", 50)
				j.Meta = map[string]string{jobmeta.Gang: " False "}
				return j
			},
			want: engine.Job{State: engine.Direct, NoGang: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ConvertStored(tc.job(t), s)
			must.Eq(t, tc.want.State, got.State)
			must.Eq(t, tc.want.QueuedAt, got.QueuedAt)
			must.Eq(t, tc.want.AdmittedAt, got.AdmittedAt)
			must.Eq(t, tc.want.Requeues, got.Requeues)
			must.Eq(t, tc.want.RequeuedAt, got.RequeuedAt)
			must.Eq(t, tc.want.PreemptedBy, got.PreemptedBy)
			must.Eq(t, tc.want.NoGang, got.NoGang)
		})
	}
}

// TestAudit22_RevertedJobIsNotAdmitted: Nomad's revert registers the old
// version anew, meta and allot.admitted-at included, with a new
// SubmitTime: the job is direct until the governor admits it again, so
// the gang timeout (which measures only sealed admissions) does not fire
// on it.
func TestAudit22_RevertedJobIsNotAdmitted(t *testing.T) {
	s := testSealer(t)
	j := sealedJob(t, s, "j", func(j *api.Job) error { return s.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
	must.Eq(t, engine.Admitted, ConvertStored(j, s).State)
	j.SubmitTime = pointerTo(metaNow.Add(3 * time.Hour).UnixNano())
	got := ConvertStored(j, s)
	must.Eq(t, engine.Direct, got.State)
	must.True(t, got.AdmittedAt.IsZero())
}

// TestAudit4_PeriodicChildIsNotAdmitted: a periodic child inherits its
// parent's sealed meta under another ID: it is a direct job.
func TestAudit4_PeriodicChildIsNotAdmitted(t *testing.T) {
	s := testSealer(t)
	parent := sealedJob(t, s, "nightly", func(j *api.Job) error {
		j.Meta = map[string]string{jobmeta.Class: "production"}
		return s.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow})
	})
	child := *parent
	child.ID, child.ParentID = pointerTo("nightly/periodic-1767268800"), pointerTo("nightly")
	got := ConvertStored(&child, s)
	must.Eq(t, engine.Direct, got.State)
	must.Eq(t, "production", got.Class, must.Sprint("the class is the user's; containment checks it"))
}

func TestConvertJobTrustsNoRecord(t *testing.T) {
	s := testSealer(t)
	j := sealedJob(t, s, "j", func(j *api.Job) error { return s.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
	must.Eq(t, engine.Direct, ConvertJob(j).State, must.Sprint("a submission's record counts for nothing"))
	must.Eq(t, engine.Direct, JobState(j, nil), must.Sprint("no sealer, no admitted job"))
	must.Eq(t, engine.Admitted, JobState(j, s))
}

func TestRecordOfRoundTrips(t *testing.T) {
	s := testSealer(t)
	at := metaNow.Add(-time.Hour)
	prev := jobmeta.Record{State: jobmeta.StateQueued, QueuedAt: at, Requeues: 2, RequeuedAt: at, PreemptedBy: []string{"ml/a"}}
	j := sealedJob(t, s, "j", func(j *api.Job) error { return s.Hold(j, prev, jobmeta.Stamp{Now: metaNow}) })
	want := prev
	want.PreemptedBy = []string{s.Ref("ml/a")} // unresolved outside a store
	must.Eq(t, want, RecordOf(ConvertStored(j, s)))
	must.Eq(t, jobmeta.Record{}, RecordOf(nil))
}

func TestNeedsTokenIsConverted(t *testing.T) {
	j := api.NewBatchJob("j", "j", "global", 50)
	j.TaskGroups = []*api.TaskGroup{{Name: pointerTo("g"), Tasks: []*api.Task{{Name: "t", Vault: &api.Vault{}}}}}
	must.True(t, ConvertJob(j).NeedsToken)
}

// TestAudit19_StoredJobsKeepWhatNeedsATokenInView: the store's decoder
// drops vault blocks, templates and services, but keeps whether they are
// there (and the service providers), so a stored job that needs its
// submitter's token is never chosen as a victim.
func TestAudit19_StoredJobsKeepWhatNeedsATokenInView(t *testing.T) {
	cases := map[string]struct {
		task, group string
		want        bool
	}{
		"plain":                 {want: false},
		"vault":                 {task: `"Vault":{"Policies":["db"]},`, want: true},
		"null vault":            {task: `"Vault":null,`, want: false},
		"template":              {task: `"Templates":[{"EmbeddedTmpl":"x"}],`, want: true},
		"no templates":          {task: `"Templates":[],`, want: false},
		"consul task service":   {task: `"Services":[{"Name":"web","Provider":"consul"}],`, want: true},
		"nomad task service":    {task: `"Services":[{"Name":"web","Provider":"nomad"}],`, want: false},
		"default group service": {group: `"Services":[{"Name":"web"}],`, want: true},
		"nomad group service":   {group: `"Services":[{"Name":"web","Provider":"nomad"}],`, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			raw := `{"ID":"j","TaskGroups":[{"Name":"g",` + tc.group + `"Tasks":[{"Name":"t",` + tc.task + `"Driver":"raw_exec"}]}]}`
			j, err := DecodeJob([]byte(raw))
			must.NoError(t, err)
			must.Eq(t, tc.want, ConvertJob(j).NeedsToken)
			must.Eq(t, "raw_exec", j.TaskGroups[0].Tasks[0].Driver)
		})
	}
}

// refs joins the opaque references of keys, as ConvertStored leaves them
// without a store to resolve them.
func refs(s *jobmeta.Sealer, keys ...string) string {
	var out []string
	for _, k := range keys {
		out = append(out, s.Ref(k))
	}
	return strings.Join(out, " ")
}

// TestAudit27_StoreResolvesPreemptorReferences: the victim's meta holds
// opaque references; the store maps those of jobs it knows back to
// "ns/id" for the engine, whatever order the listing has, and leaves the
// others as references that match no job.
func TestAudit27_StoreResolvesPreemptorReferences(t *testing.T) {
	s := testSealer(t)
	victim := sealedJob(t, s, "victim", func(j *api.Job) error {
		return s.Requeue(j, jobmeta.Record{State: jobmeta.StateAdmitted, PreemptedBy: []string{"ml/gone"}}, "ml/boss", jobmeta.Stamp{Now: metaNow})
	})
	must.StrNotContains(t, victim.Meta[jobmeta.PreemptedBy], "ml/")
	boss := api.NewBatchJob("boss", "boss", "global", 70)
	boss.Namespace = pointerTo("ml")
	store := NewStore(nil, nil)
	store.UseSealer(s)
	store.Reset(&Initial{Jobs: []*api.Job{victim, boss}})
	got, ok := store.Job("ml", "victim")
	must.True(t, ok)
	must.Eq(t, s.Ref("ml/gone")+" ml/boss", got.PreemptedBy)
	must.Eq(t, []string{s.Ref("ml/gone"), "ml/boss"}, RecordOf(got).PreemptedBy)
}
