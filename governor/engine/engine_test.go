package engine

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

const h200 = "nvidia/gpu/H200"

func gpuNode(id string, n int) *Node {
	return mkNode(id).Pool("gpu").Devices(h200, n, "memory", "143771 MiB").Build()
}

// outcome summarises a plan for assertions.
type outcome struct {
	admit   []string
	hold    []string
	reasons map[string]string // job id → substring of its verdict reason
}

func summarize(p *Plan) (admit, hold []string) {
	for _, d := range p.Decisions {
		if d.Action == Admit {
			admit = append(admit, d.JobID)
		} else {
			hold = append(hold, d.JobID) // hold or forget: the job stays stopped
		}
	}
	sort.Strings(admit)
	sort.Strings(hold)
	return admit, hold
}

func TestDecideRules(t *testing.T) {
	ml := func() *tenantB { return mkTenant("ml").Quota("gpu", 8).Limit("gpu", 8) }
	cases := map[string]struct {
		snap *Snapshot
		want outcome
	}{
		"within quota is admitted": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8)}, nil,
				mkJob("ml", "a").Pool("gpu").Device("nvidia/gpu", 4).Build()),
			want: outcome{admit: []string{"a"}},
		},
		"a held job counts in full although Nomad reports it dead": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8), gpuNode("n2", 8)},
				[]*Alloc{alloc("ml", "run", "g", "n1", 100, 128, map[string]int{h200: 8})},
				func() *Job { j := mkJob("ml", "a").Pool("gpu").Device("gpu", 4).Build(); j.Dead = true; return j }()),
			want: outcome{reasons: map[string]string{"a": "limit: needs 4 gpu; tenant ml uses 8 of limit 8"}},
		},
		"over the limit queues with numbers": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8), gpuNode("n2", 8)},
				[]*Alloc{alloc("ml", "run", "g", "n1", 100, 128, map[string]int{h200: 8})},
				mkJob("ml", "a").Pool("gpu").Device("gpu", 4).Build()),
			want: outcome{reasons: map[string]string{"a": "limit: needs 4 gpu; tenant ml uses 8 of limit 8"}},
		},
		"borrows a cohort member's idle quota": {
			snap: snap([]*Tenant{mkTenant("a").Quota("gpu", 4).Build(), mkTenant("b").Quota("gpu", 4).Build()},
				[]*Node{gpuNode("n1", 8)}, nil,
				mkJob("b", "big").Pool("gpu").Device("gpu", 8).Build()),
			want: outcome{admit: []string{"big"}},
		},
		"borrowing stops at the lend cap": {
			snap: snap([]*Tenant{mkTenant("a").Quota("gpu", 4).Lend("gpu", 2).Build(), mkTenant("b").Quota("gpu", 4).Build()},
				[]*Node{gpuNode("n1", 8)}, nil,
				mkJob("b", "big").Pool("gpu").Device("gpu", 8).Build()),
			want: outcome{reasons: map[string]string{"big": "quota: needs 8 gpu; tenant b uses 0 of quota 4 and cohort default can lend 2 more"}},
		},
		"borrowing stops at the borrower's limit": {
			snap: snap([]*Tenant{mkTenant("a").Quota("gpu", 4).Build(), mkTenant("b").Quota("gpu", 2).Limit("gpu", 4).Build()},
				[]*Node{gpuNode("n1", 8)}, nil,
				mkJob("b", "big").Pool("gpu").Device("gpu", 6).Build()),
			want: outcome{reasons: map[string]string{"big": "limit: needs 6 gpu; tenant b uses 0 of limit 4"}},
		},
		"other cohorts do not lend": {
			snap: snap([]*Tenant{mkTenant("a").Quota("gpu", 4).Cohort("x").Build(), mkTenant("b").Quota("gpu", 4).Build()},
				[]*Node{gpuNode("n1", 8)}, nil,
				mkJob("b", "big").Pool("gpu").Device("gpu", 6).Build()),
			want: outcome{reasons: map[string]string{"big": "cohort default can lend 0 more"}},
		},
		"restricted class needs the tenant's allot.classes": {
			snap: snap([]*Tenant{ml().Build(), mkTenant("prod").Classes("production", "standard").Build()},
				[]*Node{mkNode("n1").Build()}, nil,
				mkJob("ml", "p").Class("production").Build(), mkJob("prod", "p").Class("production").Build(),
				mkJob("ml", "u").Class("gold").Build()),
			want: outcome{admit: []string{"p"}, reasons: map[string]string{
				"ml/p": `class: tenant ml may not use class "production"`, "ml/u": `class: unknown class "gold"`}},
		},
		"no node of the pool": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{mkNode("c1").Build()}, nil,
				mkJob("ml", "a").Pool("gpu").Device("gpu", 1).Build()),
			want: outcome{reasons: map[string]string{"a": `fit: never fits node pool gpu: group "g": at most 0 of 1 allocations (each cpu 100 MHz, memory 128 MiB, 1 gpu) fit the 0 eligible nodes of the pool even when they are empty`}},
		},
		"device model, attribute and datacenter constraints": {
			snap: snap([]*Tenant{ml().Quota("cpu", 10000).Build()},
				[]*Node{gpuNode("n1", 8), mkNode("n2").Pool("gpu").DC("dc2").Devices("nvidia/gpu/A100", 8, "memory", "40 GiB").Build()},
				nil,
				mkJob("ml", "model").Pool("gpu").Device("nvidia/gpu/A100", 1).DCs("dc1").Build(),
				mkJob("ml", "mem").Pool("gpu").Device("gpu", 1, Constraint{"${device.attr.memory}", ">=", "80 GiB"}).DCs("dc2").Build(),
				mkJob("ml", "ok").Pool("gpu").Device("gpu", 1, Constraint{"${device.attr.memory}", ">=", "80 GiB"}).DCs("dc*").Build(),
				mkJob("ml", "meta").Constraint("${meta.rack}", "=", "r9").Build()),
			want: outcome{admit: []string{"ok"}, reasons: map[string]string{"model": "fit:", "mem": "fit:", "meta": "fit:"}},
		},
		"a gang is placed whole across nodes or not at all": {
			snap: snap([]*Tenant{mkTenant("ml").Quota("gpu", 16).Build()}, []*Node{gpuNode("n1", 4), gpuNode("n2", 4)}, nil,
				mkJob("ml", "fits").Pool("gpu").Count(2).Device("gpu", 4).QueuedAt(t0).Build(),
				mkJob("ml", "third").Pool("gpu").Count(1).Device("gpu", 4).QueuedAt(t0.Add(time.Second)).Build()),
			want: outcome{admit: []string{"fits"}, reasons: map[string]string{"third": "only 0 of 1"}},
		},
		"not ready nodes and live allocations do not count": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{mkNode("n1").Pool("gpu").Devices(h200, 8).NotReady().Build(), gpuNode("n2", 8)},
				[]*Alloc{alloc("other", "x", "g", "n2", 100, 128, map[string]int{h200: 6})},
				mkJob("ml", "a").Pool("gpu").Device("gpu", 4).Build()),
			want: outcome{reasons: map[string]string{"a": "fit:"}},
		},
		"admitted but unplaced jobs reserve quota and capacity": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8)}, nil,
				mkJob("ml", "placing").State(Admitted).Pool("gpu").Device("gpu", 6).Build(),
				mkJob("ml", "a").Pool("gpu").Device("gpu", 4).Build()),
			want: outcome{reasons: map[string]string{"a": "tenant ml uses 6 of limit 8"}},
		},
		"model quota counts the model the fit picks": {
			snap: snap([]*Tenant{mkTenant("ml").Quota(h200, 2).Limit(h200, 2).Build()}, []*Node{gpuNode("n1", 8)}, nil,
				mkJob("ml", "a").Pool("gpu").Device("gpu", 4).Build()),
			want: outcome{reasons: map[string]string{"a": "needs 4 nvidia/gpu/H200; tenant ml uses 0 of limit 2"}},
		},
		"ungoverned resources are not checked": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8)}, nil,
				mkJob("ml", "cpu").Pool("gpu").CPU(4000).Build()),
			want: outcome{admit: []string{"cpu"}},
		},
		"direct registration over the limit is held, newest first": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8), gpuNode("n2", 8)},
				[]*Alloc{alloc("ml", "old", "g", "n1", 100, 128, map[string]int{h200: 6})},
				mkJob("ml", "old").State(Direct).Pool("gpu").Device("gpu", 6).Submitted(t0).Build(),
				mkJob("ml", "new").State(Direct).Pool("gpu").Device("gpu", 4).Submitted(t0.Add(time.Second)).Build()),
			want: outcome{hold: []string{"new"}, reasons: map[string]string{"new": "registered straight to Nomad over the tenant's limit: needs 4 gpu; tenant ml uses 6 of limit 8"}},
		},
		"a held job its user stopped leaves the queue": {
			snap: snap([]*Tenant{ml().Build()}, []*Node{gpuNode("n1", 8)}, nil,
				func() *Job {
					j := mkJob("ml", "a").Pool("gpu").Device("gpu", 1).Build()
					j.StoppedByUser = true
					return j
				}()),
			want: outcome{hold: []string{"a"}},
		},
		"held jobs of a namespace no longer governed are released": {
			snap: snap(nil, []*Node{mkNode("n1").Build()}, nil, mkJob("gone", "a").Build()),
			want: outcome{admit: []string{"a"}},
		},
		"an invalid quota meta is part of the reason": {
			snap: snap([]*Tenant{mkTenant("bad").Quota("gpu", 0).Limit("gpu", 0).Err(errors.New(`allot.quota.gpu="x"`)).Build()},
				[]*Node{gpuNode("n1", 8)}, nil, mkJob("bad", "a").Pool("gpu").Device("gpu", 1).Build()),
			want: outcome{reasons: map[string]string{"a": `namespace quota meta is invalid: allot.quota.gpu="x"`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Decide(testConfig(), tc.snap)
			admit, hold := summarize(p)
			must.Eq(t, tc.want.admit, admit)
			must.Eq(t, tc.want.hold, hold)
			for id, want := range tc.want.reasons {
				v := findVerdict(t, p, id)
				must.StrContains(t, v.Reason, want)
			}
		})
	}
}

// findVerdict finds the verdict of "ns/id", or of "id" in any namespace.
func findVerdict(t *testing.T, p *Plan, id string) *Verdict {
	t.Helper()
	if v, ok := p.Verdicts[id]; ok {
		return v
	}
	for _, v := range p.Verdicts {
		if v.JobID == id {
			return v
		}
	}
	t.Fatalf("no verdict for %s in %v", id, p.Verdicts)
	return nil
}
