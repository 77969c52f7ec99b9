package proxy

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/reconcile"
)

// pinOnto is the governor's pin constraint onto ids.
func pinOnto(ids string) *api.Constraint {
	return &api.Constraint{LTarget: jobmeta.PinTarget, Operand: jobmeta.PinOperand, RTarget: ids}
}

// sentConstraints lists the constraints of group g of the job that
// reached Nomad on key, as "L op R".
func sentConstraints(t *testing.T, f *fixture, key string) []string {
	t.Helper()
	var out []string
	for _, g := range sentJob(t, f, key)["TaskGroups"].([]any) {
		cs, _ := g.(map[string]any)["Constraints"].([]any)
		for _, c := range cs {
			m := c.(map[string]any)
			out = append(out, m["LTarget"].(string)+" "+m["Operand"].(string)+" "+m["RTarget"].(string))
		}
	}
	return out
}

// TestInspectOutputDropsOnlyTheGovernorsPin: a user sends back what
// `nomad job inspect` shows of a job the governor pinned (its allot.*
// meta and the pin constraint): the proxy drops exactly the constraint
// the stored job's verified record names, once, and keeps the user's own
// constraints, an identical-looking one included. A pin a tenant forged
// (allot.pin typed into a job written straight to Nomad) drops nothing.
func TestInspectOutputDropsOnlyTheGovernorsPin(t *testing.T) {
	user := []string{"${node.datacenter} = dc1", "${node.unique.id} set_contains_any n1"}
	cases := map[string]struct {
		store func(t *testing.T, f *fixture, j *api.Job)
		want  []string
	}{
		"the governor's pin": {
			store: func(t *testing.T, f *fixture, j *api.Job) {
				now := time.Now()
				must.NoError(t, f.sealer.AdmitPinned(j, jobmeta.Record{}, map[string][]string{"g": {"n1"}}, jobmeta.Stamp{Now: now}))
				j.SubmitTime = pointer(now.UnixNano())
			},
			want: user,
		},
		"a forged pin": {
			store: func(t *testing.T, f *fixture, j *api.Job) {
				j.Meta = map[string]string{jobmeta.State: jobmeta.StateAdmitted, jobmeta.PinKey: `{"g":"n1"}`}
				j.TaskGroups[0].Constraints = append(j.TaskGroups[0].Constraints, pinOnto("n1"))
				j.SubmitTime = pointer(time.Now().UnixNano())
			},
			want: append(append([]string(nil), user...), "${node.unique.id} set_contains_any n1"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			j := gpuJob("pj", 1, false, "")
			j.Meta = nil
			j.TaskGroups[0].Constraints = []*api.Constraint{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1"}, pinOnto("n1")}
			tc.store(t, f, j)
			f.store.UpsertJob(j)
			inspect, err := json.Marshal(map[string]any{"Job": j})
			must.NoError(t, err)
			status, out := put(t, f.srv.URL+"/v1/jobs", string(inspect))
			must.Eq(t, http.StatusOK, status, must.Sprint(out))
			must.Eq(t, tc.want, sentConstraints(t, f, "PUT /v1/jobs"))
			must.MapNotContainsKey(t, metaOf(sentJob(t, f, "PUT /v1/jobs")), jobmeta.PinKey,
				must.Sprint("an update of a running job is never pinned"))
		})
	}
}

func TestPinFor(t *testing.T) {
	nodes := map[string][]string{"g": {"n1"}}
	cases := map[string]struct {
		prev *engine.Job
		want map[string][]string
	}{
		"a new job":                  {nil, nodes},
		"an edit of a held job":      {&engine.Job{State: engine.Queued}, nodes},
		"an update of a running job": {&engine.Job{State: engine.Admitted}, nil},
		"an update of a direct job":  {&engine.Job{State: engine.Direct}, nil},
		"a finished job run again":   {&engine.Job{State: engine.Admitted, Dead: true}, nodes},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, pinFor(reconcile.Verdict{Admitted: true, Nodes: nodes}, tc.prev))
		})
	}
}

// TestSetConstraints: a pin changes only the groups' Constraints members
// of the body Nomad reads; every other byte passes as received, and a
// body whose groups the proxy cannot match with the judged job is
// refused.
func TestSetConstraints(t *testing.T) {
	two := `{"X":1,"Job":{"ID":"j","Future":[1,"]"],"TaskGroups":[{"Name":"a","constraints":[{"LTarget":"u"}],"Constraints":null,"Odd":{"k":"}"}},` +
		`{"Name":"b"}]},"Tail":2}`
	cases := map[string]struct {
		body string
		cs   [][]*api.Constraint // per group, the judged constraints
		want string
		err  bool
	}{
		"two groups, duplicate and case-variant keys": {
			body: two, cs: [][]*api.Constraint{{{LTarget: "u"}, pinOnto("n1")}, {pinOnto("n2")}},
			want: `{"X":1,"Job":{"ID":"j","Future":[1,"]"],"TaskGroups":[{"Name":"a","Odd":{"k":"}"},"Constraints":[{"LTarget":"u","RTarget":"","Operand":""},` +
				`{"LTarget":"${node.unique.id}","RTarget":"n1","Operand":"set_contains_any"}]},` +
				`{"Name":"b","Constraints":[{"LTarget":"${node.unique.id}","RTarget":"n2","Operand":"set_contains_any"}]}]},"Tail":2}`,
		},
		"a dropped pin": {
			body: `{"Job":{"TaskGroups":[{"Constraints":[{"LTarget":"${node.unique.id}"}]}]}}`, cs: [][]*api.Constraint{nil},
			want: `{"Job":{"TaskGroups":[{"Constraints":null}]}}`,
		},
		"an empty group object": {
			body: `{"Job":{"TaskGroups":[{}]}}`, cs: [][]*api.Constraint{{pinOnto("n1")}},
			want: `{"Job":{"TaskGroups":[{"Constraints":[{"LTarget":"${node.unique.id}","RTarget":"n1","Operand":"set_contains_any"}]}]}}`,
		},
		"two TaskGroups members": {
			body: `{"Job":{"TaskGroups":[{}],"taskgroups":[{}]}}`, cs: [][]*api.Constraint{nil}, err: true,
		},
		"a group count that differs": {
			body: `{"Job":{"TaskGroups":[{},{}]}}`, cs: [][]*api.Constraint{nil}, err: true,
		},
		"a group that is not an object": {
			body: `{"Job":{"TaskGroups":[null]}}`, cs: [][]*api.Constraint{nil}, err: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &submission{first: []byte(tc.body)}
			ms, ok := objectMembers(s.first)
			must.True(t, ok)
			for _, m := range ms {
				if m.key == "Job" {
					s.job = m
				}
			}
			j := &api.Job{}
			for _, cs := range tc.cs {
				j.TaskGroups = append(j.TaskGroups, &api.TaskGroup{Constraints: cs})
			}
			err := s.setConstraints(j)
			if tc.err {
				must.Error(t, err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, string(s.first))
			must.True(t, json.Valid(s.first))
			must.Eq(t, "}", string(s.first[s.job.end-1:s.job.end]), must.Sprint("the Job member's end moved with it"))
		})
	}
}
