package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// borrowed: tenant a borrows both nodes with jobs that would lose more
// than FairLostWork; b's 4-GPU job, queued two limits ago, is a claim.
func borrowed(boss *Job) *scene {
	return twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).queue(boss)
}

func oldClaim() *jobB {
	return mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).QueuedAt(t0.Add(-2 * ReclaimMaxWait))
}

// later is another 4-GPU claim of b's, queued hours after oldClaim.
func later(id string, hours int) *Job {
	return mkJob("b", id).Class("standard").Pool("gpu").Device("nvidia/gpu", 4).
		QueuedAt(t0.Add(-time.Duration(hours) * time.Hour)).Build()
}

func checkpointed() Config {
	cfg := testConfig()
	cfg.Reclaim = ReclaimCheckpointed
	return cfg
}

// TestClaimClockAcrossCycles: ReclaimMaxWait counts from the cycle that
// first judged the job a claim, carried plan to snapshot, not from when
// the job queued.
func TestClaimClockAcrossCycles(t *testing.T) {
	sc := borrowed(oldClaim().Build())
	at := func(d time.Duration, claims map[string]time.Time) *Plan {
		s := sc.snap()
		s.Now, s.Claims = s.Now.Add(d), claims
		return Decide(checkpointed(), s)
	}
	first := at(0, nil)
	since := t0.Add(10 * time.Second)
	must.SliceEmpty(t, victimsOf(first))
	must.Eq(t, map[string]time.Time{"b/boss": since}, first.Claims)

	short := at(ReclaimMaxWait-time.Minute, first.Claims)
	must.SliceEmpty(t, victimsOf(short))
	must.Eq(t, first.Claims, short.Claims)
	must.StrContains(t, short.Verdicts["b/boss"].Reason, "at most until "+since.Add(ReclaimMaxWait).Format(time.RFC3339))

	waited := at(ReclaimMaxWait, short.Claims)
	must.Eq(t, []string{"a1<-b/boss"}, victimsOf(waited))

	forgotten := at(ReclaimMaxWait, nil) // a caller that carries nothing
	must.SliceEmpty(t, victimsOf(forgotten))
}

// TestPlanClaims: which jobs the plan's Claims hold, and since when.
func TestPlanClaims(t *testing.T) {
	now := t0.Add(10 * time.Second)
	requeued := oldClaim().Build()
	requeued.Requeues, requeued.RequeuedAt = 1, t0.Add(-time.Hour)
	cases := map[string]struct {
		sc   *scene
		cfg  func(*Config)
		want map[string]time.Time
	}{
		"a new claim starts now": {
			sc:   borrowed(oldClaim().Build()),
			want: map[string]time.Time{"b/boss": now},
		},
		"a carried claim keeps its start": {
			sc:   borrowed(oldClaim().Build()).claimedSince("b/boss", t0.Add(-time.Hour)),
			want: map[string]time.Time{"b/boss": t0.Add(-time.Hour)},
		},
		"a claim from before the job's requeue starts anew": {
			sc:   borrowed(requeued).claimedSince("b/boss", t0.Add(-2*time.Hour)),
			want: map[string]time.Time{"b/boss": now},
		},
		"a start in the future is not believed": {
			sc:   borrowed(oldClaim().Build()).claimedSince("b/boss", t0.Add(time.Hour)),
			want: map[string]time.Time{"b/boss": now},
		},
		"a job its tenant would borrow with is no claim": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 2, 50).run("b", "b0", "low", "n2", 2, 1).
				queue(oldClaim().Build()).claimedSince("b/boss", t0.Add(-time.Hour)),
		},
		"the jobs the failure memo judges are claims too": {
			sc:   borrowed(oldClaim().Build()).queue(later("boss2", 2)).queue(later("boss3", 1)),
			want: map[string]time.Time{"b/boss": now, "b/boss2": now, "b/boss3": now},
		},
		"a job no longer queued leaves": {
			sc:   borrowed(oldClaim().Build()).claimedSince("a/a1", t0.Add(-time.Hour)).claimedSince("b/gone", t0),
			want: map[string]time.Time{"b/boss": now},
		},
		"a job the cycle does not judge (backing off) keeps its start": {
			sc:   borrowed(func() *Job { j := oldClaim().Build(); j.Requeues, j.RequeuedAt = 1, t0; return j }()).claimedSince("b/boss", t0.Add(5*time.Second)),
			cfg:  func(c *Config) { c.BackoffBase = time.Hour },
			want: map[string]time.Time{"b/boss": t0.Add(5 * time.Second)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := checkpointed()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			p := Decide(cfg, tc.sc.snap())
			must.SliceEmpty(t, victimsOf(p))
			must.Eq(t, tc.want, p.Claims)
		})
	}
}

// TestLikeShapedClaimsNameTheirOwnWait: a claim the cycle's failure memo
// spares its own search names its own end of the wait, not that of the
// like-shaped job that searched.
func TestLikeShapedClaimsNameTheirOwnWait(t *testing.T) {
	sc := borrowed(oldClaim().Build()).queue(later("boss2", 2)).queue(later("boss3", 1)).
		claimedSince("b/boss3", t0.Add(-time.Hour))
	p := Decide(checkpointed(), sc.snap())
	for id, since := range map[string]time.Time{"boss2": t0.Add(10 * time.Second), "boss3": t0.Add(-time.Hour)} {
		must.StrContains(t, p.Verdicts["b/"+id].Reason, "at most until "+since.Add(ReclaimMaxWait).Format(time.RFC3339)+" (2 of their jobs")
	}
}
