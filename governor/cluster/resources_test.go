package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

// groupsOf decodes a job body the way the proxy and the watcher do and
// converts it.
func groupsOf(t *testing.T, body string) []engine.Group {
	t.Helper()
	j, err := DecodeJob([]byte(body))
	must.NoError(t, err)
	return ConvertJob(j).Groups
}

func TestAudit5_JudgedAfterNomadsDefaults(t *testing.T) {
	cases := map[string]struct {
		body string
		want engine.Group
	}{
		"a device without count asks for one instance": {
			body: `{"ID":"j","TaskGroups":[{"Name":"g","Count":6,"Tasks":[{"Name":"t","Resources":{"CPU":100,"MemoryMB":64,"Devices":[{"Name":"nvidia/gpu"}]}}]}]}`,
			want: engine.Group{Name: "g", Count: 6, CPU: 100, MemoryMB: 64, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu", Count: 1}}},
		},
		"a group without count runs scaling.min": {
			body: `{"ID":"j","TaskGroups":[{"Name":"g","Scaling":{"Min":8,"Max":10,"Policy":{"x":1}},"Tasks":[{"Name":"t","Resources":{"CPU":100,"MemoryMB":64}}]}]}`,
			want: engine.Group{Name: "g", Count: 8, CPU: 100, MemoryMB: 64},
		},
		"a group without count or scaling runs one": {
			body: `{"ID":"j","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Resources":{"CPU":100,"MemoryMB":64}}]}]}`,
			want: engine.Group{Name: "g", Count: 1, CPU: 100, MemoryMB: 64},
		},
		"a task without resources asks for 100 MHz and 300 MiB": {
			body: `{"ID":"j","TaskGroups":[{"Name":"g","Count":2,"Tasks":[{"Name":"a"},{"Name":"b","Resources":{}}]}]}`,
			want: engine.Group{Name: "g", Count: 2, CPU: 200, MemoryMB: 600},
		},
		"cores leave cpu at zero and mark the group": {
			body: `{"ID":"j","TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Resources":{"Cores":2,"MemoryMB":64}}]}]}`,
			want: engine.Group{Name: "g", Count: 1, CPU: 0, MemoryMB: 64, Cores: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := groupsOf(t, tc.body)
			must.SliceLen(t, 1, got)
			must.Eq(t, tc.want, got[0])
		})
	}
}

func TestAudit5_SubmissionAndStoredJobWeighTheSame(t *testing.T) {
	body := `{"ID":"j","TaskGroups":[{"Name":"g","Scaling":{"Min":3},"Tasks":[{"Name":"t","Resources":{"Devices":[{"Name":"gpu"}]}}]}]}`
	sub, err := DecodeJob([]byte(body))
	must.NoError(t, err)
	stored, err := DecodeJob([]byte(body))
	must.NoError(t, err)
	stored.Canonicalize() // what Nomad stores and the watcher reads back
	must.Eq(t, ConvertJob(stored).Groups, ConvertJob(sub).Groups)
	must.Nil(t, sub.TaskGroups[0].Count, must.Sprint("the submission itself is left as it was"))
}

func TestAudit6_DeviceCountOverflow(t *testing.T) {
	body := `{"ID":"j","TaskGroups":[{"Name":"g","Count":4294967296000,"Tasks":[{"Name":"t","Resources":{"CPU":-5,"MemoryMB":9223372036854775807,"Devices":[{"Name":"nvidia/gpu","Count":18446744073709551612}]}}]}]}`
	g := groupsOf(t, body)[0]
	must.Eq(t, MaxCount, g.Devices[0].Count, must.Sprint("2^64-4 is read as the bound, never as -4"))
	must.Eq(t, MaxCount, g.Count)
	must.Eq(t, int64(0), g.CPU, must.Sprint("a negative amount counts as zero"))
	must.Positive(t, g.MemoryMB)
	must.Less(t, int64(math.MaxInt64/2), g.MemoryMB)
}

func TestSystemJobsAreGovernedNotStopped(t *testing.T) {
	for _, typ := range []string{api.JobTypeSystem, api.JobTypeSysbatch} {
		j := api.NewBatchJob("s", "s", "global", 100)
		j.Type = &typ
		c := ConvertJob(j)
		must.True(t, c.System)
		must.Eq(t, 100, c.Priority)
		must.NotEq(t, engine.Stopped, c.State, must.Sprintf("%s jobs are governed", typ))
	}
}

// TestRealAllocationsCountAsPlaced: an allocation Nomad 1.6.1 placed (the
// recorded listing) has the shape its group asks for, so it counts as
// placed and started: an admitted job whose allocation runs is never
// taken for one whose update replaces it, nor requeued by the gang
// timeout.
func TestRealAllocationsCountAsPlaced(t *testing.T) {
	_, final := loadFixtures(t)
	s := NewStore(nil, nil)
	s.Reset(final)
	snap := s.Snapshot(metaNow)
	j, ok := s.Job("ml", "direct")
	must.True(t, ok)
	admitted := *j
	admitted.State, admitted.AdmittedAt = engine.Admitted, metaNow.Add(-time.Hour)
	snap.Jobs = []*engine.Job{&admitted}
	cfg := engine.Config{GangTimeout: time.Minute, Classes: map[string]engine.Class{"standard": {Priority: 50}}}
	snap.Tenants = map[string]*engine.Tenant{"ml": {Tenant: quota.Tenant{Namespace: "ml", Cohort: "default", Weight: 1}}}
	p := engine.Decide(cfg, snap)
	_, decided := p.Decision("ml", "direct")
	must.False(t, decided, must.Sprint("its running allocation counts as placed and started"))

	bigger := admitted
	bigger.Groups = append([]engine.Group(nil), admitted.Groups...)
	bigger.Groups[0].MemoryMB++
	snap.Jobs = []*engine.Job{&bigger}
	p = engine.Decide(cfg, snap)
	d, decided := p.Decision("ml", "direct")
	must.True(t, decided, must.Sprint("control: an allocation of another shape is replaced, not placed"))
	must.Eq(t, engine.Requeue, d.Action)
}

// A group saves a checkpoint on stop when the tasks holding its devices
// run under the ckpt driver; a sidecar of another driver does not count,
// and a device task of another driver does.
func TestGroupSavesOnStopWhenItsDeviceTasksRunUnderCkpt(t *testing.T) {
	const gpu = `"Resources":{"Devices":[{"Name":"nvidia/gpu","Count":1}]}`
	cases := map[string]struct {
		tasks string
		want  bool
	}{
		"device task under ckpt":                {`{"Name":"t","Driver":"ckpt",` + gpu + `}`, true},
		"device task under ckpt, docker logger": {`{"Name":"t","Driver":"ckpt",` + gpu + `},{"Name":"log","Driver":"docker"}`, true},
		"device task under raw_exec":            {`{"Name":"t","Driver":"raw_exec",` + gpu + `}`, false},
		"one of two device tasks under ckpt":    {`{"Name":"a","Driver":"ckpt",` + gpu + `},{"Name":"b","Driver":"exec",` + gpu + `}`, false},
		"no devices, all under ckpt":            {`{"Name":"a","Driver":"ckpt"},{"Name":"b","Driver":"ckpt"}`, true},
		"no devices, one under docker":          {`{"Name":"a","Driver":"ckpt"},{"Name":"b","Driver":"docker"}`, false},
		"a driver named like ckpt":              {`{"Name":"t","Driver":"CKPT",` + gpu + `}`, false},
		"no tasks":                              {``, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := groupsOf(t, `{"ID":"j","TaskGroups":[{"Name":"g","Tasks":[`+tc.tasks+`]}]}`)
			must.SliceLen(t, 1, got)
			must.Eq(t, tc.want, got[0].SavesOnStop)
		})
	}
}
