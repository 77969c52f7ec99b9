package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// The rest doubles per requeue from Config.RequeueRest up to
// RequeueRestMax; zero is no rest.
func TestRestOf(t *testing.T) {
	on := Config{RequeueRest: 2 * time.Minute}
	cases := []struct {
		cfg      Config
		requeues int
		want     time.Duration
	}{
		{cfg: Config{}, requeues: 3, want: 0},
		{cfg: on, requeues: 0, want: 0},
		{cfg: on, requeues: 1, want: 2 * time.Minute},
		{cfg: on, requeues: 2, want: 4 * time.Minute},
		{cfg: on, requeues: 5, want: 32 * time.Minute},
		{cfg: on, requeues: 6, want: time.Hour},
		{cfg: on, requeues: 1000, want: time.Hour},
		{cfg: Config{RequeueRest: 50 * time.Minute}, requeues: 2, want: time.Hour},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, tc.cfg.restOf(tc.requeues), must.Sprintf("rest %s, %d requeues", tc.cfg.RequeueRest, tc.requeues))
	}
}

// restScene: tenant a (nominal 4, limit 8) runs two low jobs on two
// 4-GPU nodes: "again", requeued twice and admitted again startedAgo ago
// (it lost only that), and "long", never requeued, 5 minutes past its
// checkpoint (ClassLostWork: its tenant's higher class may take it). Tenant b (nominal 4) runs nothing. a borrows b's 4.
func restScene(startedAgo time.Duration) *scene {
	sc := &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 4).Limit("gpu", 8).Build(),
		mkTenant("b").Quota("gpu", 4).Limit("gpu", 8).Build(),
	}, nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4)}}
	sc.run("a", "again", "low", "n1", 4, 0).run("a", "long", "low", "n2", 4, 5)
	sc.readmitted(0, 2, startedAgo)
	return sc
}

// readmitted makes the i-th running job one requeued requeues times and
// admitted again ago before the snapshot, with no checkpoint since.
func (sc *scene) readmitted(i, requeues int, ago time.Duration) {
	since := t0.Add(10*time.Second - ago)
	sc.jobs[i].Requeues, sc.jobs[i].AdmittedAt = requeues, since
	sc.allocs[i].StartedAt, sc.allocs[i].LastCheckpoint = since, time.Time{}
}

// A job requeued before rests once admitted again (RequeueRest doubled
// per requeue): its own tenant's higher class and fair share pass it over
// for a victim that loses more, or wait; another tenant reclaiming its
// nominal quota still takes it. Without a rest, the cheapest victim is
// the job that was just admitted again, every time.
func TestResumedJobRests(t *testing.T) {
	rest := testConfig()
	rest.RequeueRest = 2 * time.Minute // twice requeued: 4 minutes
	cases := map[string]struct {
		cfg        Config
		startedAgo time.Duration
		preemptor  *Job
		want       []string
	}{
		"no rest: the cheapest is the one just admitted again": {
			cfg: testConfig(), startedAgo: 3 * time.Minute, preemptor: gpuJob("a", "std", "standard", 4),
			want: []string{"again<-a/std"}},
		"resting: its tenant's higher class takes the other": {
			cfg: rest, startedAgo: 3 * time.Minute, preemptor: gpuJob("a", "std", "standard", 4),
			want: []string{"long<-a/std"}},
		"rested: the cheapest again": {
			cfg: rest, startedAgo: 4*time.Minute + 30*time.Second, preemptor: gpuJob("a", "std", "standard", 4),
			want: []string{"again<-a/std"}},
		"a reclaim takes a resting job": {
			cfg: rest, startedAgo: 3 * time.Minute, preemptor: gpuJob("b", "mine", "standard", 4),
			want: []string{"again<-b/mine"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc := restScene(tc.startedAgo)
			sc.queue(tc.preemptor)
			p := Decide(tc.cfg, sc.snap())
			must.Eq(t, tc.want, victimsOf(p))
		})
	}
}

// Nothing but resting jobs to take: the higher class waits instead.
func TestOnlyRestingVictimsWait(t *testing.T) {
	cfg := testConfig()
	cfg.RequeueRest = 2 * time.Minute
	sc := restScene(3 * time.Minute)
	sc.readmitted(1, 1, 10*time.Second)
	sc.queue(gpuJob("a", "std", "standard", 4))
	p := Decide(cfg, sc.snap())
	must.SliceEmpty(t, victimsOf(p))
	must.StrHasPrefix(t, "limit:", findVerdict(t, p, "std").Reason)
}

// Fair share passes a resting job over too: b borrows less than a and
// takes one of a's borrowed jobs, but not the one a just got back.
func TestFairShareSkipsRestingJob(t *testing.T) {
	sc := &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 4).Build(), mkTenant("b").Quota("gpu", 4).Build(), mkTenant("c").Quota("gpu", 12).Build(),
	}, nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4), gpuNode("n3", 4), gpuNode("n4", 4), gpuNode("n5", 4)}}
	sc.run("a", "a1", "low", "n1", 4, 0).run("a", "a2", "low", "n2", 4, 20).run("a", "a3", "low", "n3", 4, 20).run("a", "a4", "low", "n4", 4, 20)
	sc.run("b", "b1", "low", "n5", 4, 20)
	sc.readmitted(0, 2, 3*time.Minute)
	sc.queue(gpuJob("b", "more", "low", 4))
	cfg := testConfig()
	must.Eq(t, []string{"a1<-b/more"}, victimsOf(Decide(cfg, sc.snap())), must.Sprint("no rest: a1 lost least"))
	cfg.RequeueRest = 2 * time.Minute
	must.Eq(t, []string{"a2<-b/more"}, victimsOf(Decide(cfg, sc.snap())), must.Sprint("a1 rests 4 minutes"))
}
