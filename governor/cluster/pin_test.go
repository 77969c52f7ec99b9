package cluster

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// pinJob is a sealed batch job with one group "g", as Nomad stores it,
// written by write.
func pinJob(t *testing.T, s *jobmeta.Sealer, write func(*api.Job) error) *api.Job {
	t.Helper()
	return sealedJob(t, s, "j", func(j *api.Job) error {
		j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(api.NewTask("t", "ckpt")))
		return write(j)
	})
}

func TestStoreReadsOnlyVerifiedPins(t *testing.T) {
	s := testSealer(t)
	nodes := map[string][]string{"g": {"n2", "n1"}}
	cases := map[string]struct {
		job    func(t *testing.T) *api.Job
		pinned bool
		pin    jobmeta.Pin
	}{
		"pinned admission": {
			job: func(t *testing.T) *api.Job {
				return pinJob(t, s, func(j *api.Job) error { return s.AdmitPinned(j, jobmeta.Record{}, nodes, jobmeta.Stamp{Now: metaNow}) })
			},
			pinned: true, pin: jobmeta.Pin{"g": "n1,n2"},
		},
		"admitted without a pin": {
			job: func(t *testing.T) *api.Job {
				return pinJob(t, s, func(j *api.Job) error { return s.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
			},
		},
		"a forged allot.pin on a sealed admission": {
			job: func(t *testing.T) *api.Job {
				j := pinJob(t, s, func(j *api.Job) error { return s.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
				j.Meta[jobmeta.PinKey] = `{"g":"n1"}`
				return j
			},
		},
		"a forged record with a pin, written straight to Nomad": {
			job: func(t *testing.T) *api.Job {
				j := pinJob(t, s, func(j *api.Job) error {
					j.Meta = map[string]string{jobmeta.State: jobmeta.StateAdmitted, jobmeta.PinKey: `{"g":"n1"}`}
					j.TaskGroups[0].Constraints = []*api.Constraint{{LTarget: jobmeta.PinTarget, Operand: jobmeta.PinOperand, RTarget: "n1"}}
					return nil
				})
				return j
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := NewStore(nil, nil)
			st.UseSealer(s)
			st.UpsertJob(tc.job(t))
			got, ok := st.Job("ml", "j")
			must.True(t, ok)
			must.Eq(t, tc.pinned, got.Pinned)
			must.Eq(t, tc.pin, st.PinOf(got))
			must.Eq(t, tc.pinned, ConvertStored(tc.job(t), s).Pinned)
		})
	}
}

func TestPinOfIsPerVersion(t *testing.T) {
	s := testSealer(t)
	st := NewStore(nil, nil)
	st.UseSealer(s)
	pinned := pinJob(t, s, func(j *api.Job) error {
		return s.AdmitPinned(j, jobmeta.Record{}, map[string][]string{"g": {"n1"}}, jobmeta.Stamp{Now: metaNow})
	})
	st.UpsertJob(pinned)
	v10, _ := st.Job("ml", "j")
	must.Eq(t, jobmeta.Pin{"g": "n1"}, st.PinOf(v10))
	// The governor unpins it: version 11 is not pinned, and version 10's
	// pin is no longer what the store holds.
	unpinned := pinJob(t, s, func(j *api.Job) error {
		j.TaskGroups[0].Constraints = pinned.TaskGroups[0].Constraints
		return s.Unpin(j, jobmeta.Parse(pinned.Meta), jobmeta.Stamp{Now: metaNow})
	})
	unpinned.JobModifyIndex = pointerTo(uint64(11))
	must.SliceEmpty(t, unpinned.TaskGroups[0].Constraints)
	st.UpsertJob(unpinned)
	v11, _ := st.Job("ml", "j")
	must.False(t, v11.Pinned)
	must.Nil(t, st.PinOf(v11))
	must.Nil(t, st.PinOf(v10))
	st.DeleteJob("ml", "j")
	must.Nil(t, st.PinOf(v10))
}

func TestNoPin(t *testing.T) {
	distinctHosts := &api.Constraint{Operand: "distinct_hosts", RTarget: "true"}
	distinctProp := &api.Constraint{LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "1"}
	spread := &api.Spread{Attribute: "${node.datacenter}"}
	affinity := &api.Affinity{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: pointerTo(int8(50))}
	cases := map[string]struct {
		edit func(j *api.Job)
		want bool
	}{
		"plain":                        {func(*api.Job) {}, false},
		"a user's own node constraint": {func(j *api.Job) { j.Constrain(api.NewConstraint("${node.unique.id}", "set_contains_any", "n1")) }, false},
		"job spread":                   {func(j *api.Job) { j.Spreads = []*api.Spread{spread} }, true},
		"group spread":                 {func(j *api.Job) { j.TaskGroups[0].Spreads = []*api.Spread{spread} }, true},
		"job distinct_hosts":           {func(j *api.Job) { j.Constraints = []*api.Constraint{distinctHosts} }, true},
		"group distinct_property":      {func(j *api.Job) { j.TaskGroups[0].Constraints = []*api.Constraint{distinctProp} }, true},
		"task distinct_hosts":          {func(j *api.Job) { j.TaskGroups[0].Tasks[0].Constraints = []*api.Constraint{distinctHosts} }, true},
		"job affinity":                 {func(j *api.Job) { j.Affinities = []*api.Affinity{affinity} }, true},
		"group affinity":               {func(j *api.Job) { j.TaskGroups[0].Affinities = []*api.Affinity{affinity} }, true},
		"task affinity":                {func(j *api.Job) { j.TaskGroups[0].Tasks[0].Affinities = []*api.Affinity{affinity} }, true},
		"device affinity": {func(j *api.Job) {
			j.TaskGroups[0].Tasks[0].Resources = &api.Resources{Devices: []*api.RequestedDevice{
				{Name: "nvidia/gpu", Count: pointerTo(uint64(1)), Affinities: []*api.Affinity{affinity}}}}
		}, true},
		"a device without affinity": {func(j *api.Job) {
			j.TaskGroups[0].Tasks[0].Resources = &api.Resources{Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointerTo(uint64(1))}}}
		}, false},
		"periodic parent":      {func(j *api.Job) { j.Periodic = &api.PeriodicConfig{Spec: pointerTo("* * * * *")} }, true},
		"parameterized parent": {func(j *api.Job) { j.ParameterizedJob = &api.ParameterizedJobConfig{} }, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := api.NewBatchJob("j", "j", "global", 50)
			j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(api.NewTask("t", "ckpt")))
			tc.edit(j)
			must.Eq(t, tc.want, ConvertJob(j).NoPin)
			// The store's wire decoding keeps what NoPin reads.
			data, err := json.Marshal(j)
			must.NoError(t, err)
			dec, err := DecodeJob(data)
			must.NoError(t, err)
			must.Eq(t, tc.want, ConvertJob(dec).NoPin)
		})
	}
}
