package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func queueIDs(p *Plan) []string {
	var ids []string
	for _, v := range p.Queue {
		ids = append(ids, v.Namespace+"/"+v.JobID)
	}
	return ids
}

func TestQueueOrder(t *testing.T) {
	// One node with no free GPU: nothing is admitted, so the queue shows
	// the order itself.
	full := func() []*Node { return []*Node{gpuNode("n1", 0)} }
	// a's weighted share is 0.4, b's 0.2.
	shares := func() ([]*Tenant, []*Alloc) {
		return []*Tenant{mkTenant("a").Quota("cpu", 1000).Classes("production").Build(), mkTenant("b").Quota("cpu", 1000).Weight(4).Build()},
			[]*Alloc{alloc("a", "x", "g", "n1", 400, 0, nil), alloc("b", "y", "g", "n1", 800, 0, nil)}
	}
	job := func(ns, id, class string, minutes int) *Job {
		return mkJob(ns, id).Class(class).Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(time.Duration(minutes) * time.Minute)).Build()
	}
	shareTenants, shareAllocs := shares()
	cases := map[string]struct {
		order   string
		tenants []*Tenant
		allocs  []*Alloc
		jobs    []*Job
		want    []string
	}{
		"class order: a higher class first, whatever the tenant's share": {
			tenants: shareTenants, allocs: shareAllocs,
			jobs: []*Job{job("a", "high", "high", 1), job("b", "low", "low", 0)},
			want: []string{"a/high", "b/low"},
		},
		"share order: the lower share first, whatever the class": {
			order: QueueOrderShare, tenants: shareTenants, allocs: shareAllocs,
			jobs: []*Job{job("a", "high", "high", 0), job("b", "low", "low", 1), job("b", "best", "best-effort", 0)},
			want: []string{"b/low", "b/best", "a/high"},
		},
		"share order: a tenant's own jobs by class, then queued-at": {
			order:   QueueOrderShare,
			tenants: []*Tenant{mkTenant("a").Build()},
			jobs:    []*Job{job("a", "low", "low", 0), job("a", "high2", "high", 2), job("a", "high1", "high", 1)},
			want:    []string{"a/high1", "a/high2", "a/low"},
		},
		"share order: a class that is never a victim still goes first": {
			order: QueueOrderShare, tenants: shareTenants, allocs: shareAllocs,
			jobs: []*Job{job("b", "std", "standard", 0), job("a", "prod", "production", 1)},
			want: []string{"a/prod", "b/std"},
		},
		"class priority first": {
			tenants: []*Tenant{mkTenant("a").Build()},
			jobs: []*Job{
				mkJob("a", "low").Class("low").Pool("gpu").Device("gpu", 1).QueuedAt(t0).Build(),
				mkJob("a", "high").Class("high").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(time.Minute)).Build(),
			},
			want: []string{"a/high", "a/low"},
		},
		"then the lower weighted dominant share": {
			tenants: []*Tenant{mkTenant("a").Quota("cpu", 1000).Build(), mkTenant("b").Quota("cpu", 1000).Weight(4).Build()},
			allocs: []*Alloc{
				alloc("a", "x", "g", "n1", 400, 0, nil), alloc("b", "y", "g", "n1", 800, 0, nil),
			},
			jobs: []*Job{
				mkJob("a", "j").Pool("gpu").Device("gpu", 1).QueuedAt(t0).Build(),
				mkJob("b", "j").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(time.Minute)).Build(),
			},
			want: []string{"b/j", "a/j"},
		},
		"then queued-at": {
			tenants: []*Tenant{mkTenant("a").Build()},
			jobs: []*Job{
				mkJob("a", "second").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(time.Second)).Build(),
				mkJob("a", "first").Pool("gpu").Device("gpu", 1).QueuedAt(t0).Build(),
			},
			want: []string{"a/first", "a/second"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.QueueOrder = tc.order
			p := Decide(cfg, snap(tc.tenants, full(), tc.allocs, tc.jobs...))
			must.Eq(t, tc.want, queueIDs(p))
		})
	}
}

func TestPositions(t *testing.T) {
	s := snap([]*Tenant{mkTenant("a").Build(), mkTenant("b").Build()}, []*Node{gpuNode("n1", 0)}, nil,
		mkJob("a", "1").Pool("gpu").Device("gpu", 1).QueuedAt(t0).Build(),
		mkJob("b", "2").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(time.Second)).Build(),
		mkJob("a", "3").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(2*time.Second)).Build())
	p := Decide(testConfig(), s)
	type pos struct{ All, Tenant int }
	got := map[string]pos{}
	for _, v := range p.Queue {
		got[v.Namespace+"/"+v.JobID] = pos{v.Position, v.TenantPosition}
		must.Eq(t, v.Position, p.Verdicts[v.Namespace+"/"+v.JobID].Position)
	}
	must.Eq(t, map[string]pos{"a/1": {1, 1}, "b/2": {2, 1}, "a/3": {3, 2}}, got)
	must.Eq(t, 2, p.Tenants[0].Queued)
}

func TestBackfillAndStarvation(t *testing.T) {
	// The head fits the node once the other namespace's 4 GPUs are free:
	// it waits for free capacity, so it may starve (a job that fits no
	// node even empty never does: TestAudit8_NeverFittingHeadBlocksNothing).
	nodes := []*Node{gpuNode("n1", 8)}
	busy := []*Alloc{alloc("other", "busy", "g", "n1", 100, 128, map[string]int{h200: 4})}
	head := func(queued time.Time) *Job {
		return mkJob("a", "head").Pool("gpu").Device("gpu", 8).QueuedAt(queued).Build()
	}
	small := mkJob("a", "small").Pool("gpu").Device("gpu", 2).QueuedAt(t0.Add(time.Second)).Build()
	other := mkJob("a", "cpu").Pool("default").QueuedAt(t0.Add(time.Second)).Build()
	tenants := []*Tenant{mkTenant("a").Build()}

	t.Run("a smaller job passes a head that does not fit", func(t *testing.T) {
		p := Decide(testConfig(), snap(tenants, append(nodes, mkNode("c").Build()), busy, head(t0), small, other))
		admit, _ := summarize(p)
		must.Eq(t, []string{"cpu", "small"}, admit)
		must.StrContains(t, p.Verdicts["a/head"].Reason, "fit:")
	})
	t.Run("a starving head blocks its pool only", func(t *testing.T) {
		s := snap(tenants, append(nodes, mkNode("c").Build()), busy, head(t0.Add(-time.Hour)), small, other)
		p := Decide(testConfig(), s)
		admit, _ := summarize(p)
		must.Eq(t, []string{"cpu"}, admit)
		must.StrContains(t, p.Verdicts["a/small"].Reason, "order: waiting behind a/head, which has waited 1h0m10s (longer than the starvation timeout 10m0s)")
	})
}

func TestDecisionsCarryClassPriorityAndQueueTime(t *testing.T) {
	queued := t0.Add(-time.Minute)
	p := Decide(testConfig(), snap([]*Tenant{mkTenant("a").Build()}, []*Node{mkNode("n").Build()}, nil,
		mkJob("a", "j").Class("high").QueuedAt(queued).Build()))
	d, ok := p.Decision("a", "j")
	must.True(t, ok)
	must.Eq(t, Decision{Action: Admit, Namespace: "a", JobID: "j", Version: 10, Class: "high", Priority: 70, QueuedAt: queued, Reason: d.Reason,
		Nodes: map[string][]string{"g": {"n"}}}, d)
	must.StrContains(t, d.Reason, "class: class high (priority 70); limit: no limit applies; quota: no quota applies; fit: all 1 allocations fit")
}

func TestQueuePosition(t *testing.T) {
	s := snap([]*Tenant{mkTenant("a").Build(), mkTenant("b").Build()}, []*Node{gpuNode("n1", 0)}, nil,
		mkJob("a", "1").Pool("gpu").Device("gpu", 1).QueuedAt(t0).Build(),
		mkJob("b", "2").Pool("gpu").Class("high").Device("gpu", 1).QueuedAt(t0.Add(time.Second)).Build(),
		mkJob("a", "3").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(2*time.Second)).Build())
	p := Decide(testConfig(), s)
	late := mkJob("a", "new").Pool("gpu").Device("gpu", 1).QueuedAt(t0.Add(time.Hour)).Build()
	all, ten := QueuePosition(p, testConfig(), late, "standard")
	must.Eq(t, 4, all)
	must.Eq(t, 3, ten)
	all, ten = QueuePosition(p, testConfig(), late, "high")
	must.Eq(t, 2, all, must.Sprint("behind the older high job only"))
	must.Eq(t, 1, ten)
}

func TestBaseDecidesLikeACycle(t *testing.T) {
	tenants := []*Tenant{mkTenant("ml").Quota("gpu", 8).Limit("gpu", 8).Build()}
	nodes := []*Node{gpuNode("n1", 8)}
	running := mkJob("ml", "run").State(Admitted).Pool("gpu").Device("gpu", 6).Build()
	queued := mkJob("ml", "q").Pool("gpu").Device("gpu", 8).Build()
	b := Prepare(testConfig(), snap(tenants, nodes, nil, running, queued))

	small := mkJob("ml", "small").Pool("gpu").Device("gpu", 2).Build()
	v := b.Decide(small, false)
	must.Eq(t, Admitted, v.State)
	must.Eq(t, Admitted, b.Decide(small, false).State, must.Sprint("without commit nothing is kept"))
	p := Decide(testConfig(), snap(tenants, nodes, nil, running, small))
	_, admitted := p.Decision("ml", "small")
	must.True(t, admitted, must.Sprint("a cycle agrees"))

	must.Eq(t, Admitted, b.Decide(small, true).State)
	other := mkJob("ml", "other").Pool("gpu").Device("gpu", 1).Build()
	v = b.Decide(other, false)
	must.Eq(t, Queued, v.State, must.Sprint("the committed job holds its GPUs"))
	must.Eq(t, "limit: needs 1 gpu; tenant ml uses 8 of limit 8", v.Reason)
}
