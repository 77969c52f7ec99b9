package engine

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/quota"
)

func TestWaterFill(t *testing.T) {
	cases := map[string]struct {
		capacity       float64
		weights, wants []float64
		want           []float64
	}{
		"everyone wants more: by weight":           {24, []float64{8, 8, 8}, []float64{30, 30, 30}, []float64{8, 8, 8}},
		"what one leaves goes to the others":       {24, []float64{8, 8, 8}, []float64{2, 30, 30}, []float64{2, 11, 11}},
		"two levels":                               {24, []float64{8, 8, 8}, []float64{2, 10, 30}, []float64{2, 10, 12}},
		"weights divide":                           {30, []float64{2, 1}, []float64{100, 100}, []float64{20, 10}},
		"enough for all":                           {100, []float64{1, 1}, []float64{10, 20}, []float64{10, 20}},
		"no weight or no want gets nothing":        {16, []float64{0, 8, 8}, []float64{10, 0, 30}, []float64{0, 0, 16}},
		"no capacity":                              {0, []float64{8, 8}, []float64{4, 4}, []float64{0, 0}},
		"unsorted input keeps its order":           {20, []float64{1, 1, 1}, []float64{30, 1, 5}, []float64{14, 1, 5}},
		"a heavier tenant is satisfied at a level": {12, []float64{3, 1}, []float64{3, 50}, []float64{3, 9}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := WaterFill(tc.capacity, tc.weights, tc.wants)
			must.Len(t, len(tc.want), got)
			for i := range got {
				must.True(t, math.Abs(got[i]-tc.want[i]) < 1e-9, must.Sprintf("%v, want %v", got, tc.want))
			}
		})
	}
}

// TestPropertyWaterFill: nobody gets more than it wants, nothing beyond
// the capacity is handed out, and all of it is when the wants exceed it;
// a tenant that gets less than it wants has a weighted level no lower
// than anyone's.
func TestPropertyWaterFill(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		n := 1 + r.Intn(6)
		weights, wants := make([]float64, n), make([]float64, n)
		var sum float64
		for k := range wants {
			weights[k], wants[k] = float64(r.Intn(5)), float64(r.Intn(40))
			if weights[k] > 0 {
				sum += wants[k]
			}
		}
		capacity := float64(r.Intn(100))
		got := WaterFill(capacity, weights, wants)
		var total float64
		for k, g := range got {
			must.True(t, g <= wants[k]+1e-9 && g >= 0, must.Sprintf("case %d: %v of %v", i, got, wants))
			total += g
		}
		must.True(t, total <= capacity+1e-9, must.Sprintf("case %d", i))
		must.True(t, math.Abs(total-math.Min(capacity, sum)) < 1e-6, must.Sprintf("case %d: %v hands out %v of %v", i, got, total, capacity))
		for k := range got {
			if weights[k] == 0 || got[k] >= wants[k]-1e-9 {
				continue
			}
			for m := range got {
				if weights[m] > 0 {
					must.True(t, got[m]/weights[m] <= got[k]/weights[k]+1e-9, must.Sprintf("case %d: %v", i, got))
				}
			}
		}
	}
}

// sixNodes: a, b and c, nominal 16 GPUs each (no limits), on six 8-GPU
// nodes.
func sixNodes() *scene {
	return &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 16).Build(),
		mkTenant("b").Quota("gpu", 16).Build(),
		mkTenant("c").Quota("gpu", 16).Build(),
	}, nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8), gpuNode("n4", 8), gpuNode("n5", 8), gpuNode("n6", 8)}}
}

// TestFairShareEntitlementRule: under Config.FairShareRule
// FairRuleEntitlement a borrower below its entitlement takes from a
// borrower above its own when that brings both closer to their
// entitlements, its job larger than what it lacks included (the gap rule
// refuses that); tenants at their entitlement take nothing from each
// other, and a move that overshoots more than it corrects is refused.
func TestFairShareEntitlementRule(t *testing.T) {
	// Quota 16 each on six 8-GPU nodes (48 GPUs). gang: a holds 16 and
	// asks for 8 (demand 24), b holds 28, c 4: entitlements c 4, a and b
	// 22. After: a 24, b 20, two GPUs from each entitlement instead of six.
	// b3, the one cheap victim, is lostMin past its checkpoint.
	gangAfter := func(lostMin int) func() *scene {
		return func() *scene {
			return sixNodes().run("a", "a1", "standard", "n1", 8, 1).run("a", "a2", "standard", "n2", 8, 1).
				run("b", "b1", "standard", "n3", 8, 50).run("b", "b2", "standard", "n4", 8, 50).
				run("b", "b3", "standard", "n5", 8, lostMin).run("b", "b4", "standard", "n6", 4, 50).
				run("c", "c1", "standard", "n6", 4, 1).
				queue(gpuJob("a", "gang", "standard", 8))
		}
	}
	gang := gangAfter(3)
	// small: gang with a asking for 4 GPUs (demand 20) and b3 split
	// into two 4-GPU jobs, b3 lostMin past its checkpoint, b5 50:
	// entitlements a 20, b 24, c 4; taking b3 leaves b at its
	// entitlement.
	small := func(lostMin int) func() *scene {
		return func() *scene {
			return sixNodes().run("a", "a1", "standard", "n1", 8, 1).run("a", "a2", "standard", "n2", 8, 1).
				run("b", "b1", "standard", "n3", 8, 50).run("b", "b2", "standard", "n4", 8, 50).
				run("b", "b3", "standard", "n5", 4, lostMin).run("b", "b5", "standard", "n5", 4, 50).
				run("b", "b4", "standard", "n6", 4, 50).run("c", "c1", "standard", "n6", 4, 1).
				queue(gpuJob("a", "small", "standard", 4))
		}
	}
	// pair: gang with b3 split into two 4-GPU jobs, b3 lost3 and b5 lost5
	// minutes past their checkpoints: either alone leaves b above its
	// entitlement (22), the two the gang needs leave it at 20.
	pairAfter := func(lost3, lost5 int) func() *scene {
		return func() *scene {
			return sixNodes().run("a", "a1", "standard", "n1", 8, 1).run("a", "a2", "standard", "n2", 8, 1).
				run("b", "b1", "standard", "n3", 8, 50).run("b", "b2", "standard", "n4", 8, 50).
				run("b", "b3", "standard", "n5", 4, lost3).run("b", "b5", "standard", "n5", 4, lost5).
				run("b", "b4", "standard", "n6", 4, 50).run("c", "c1", "standard", "n6", 4, 1).
				queue(gpuJob("a", "gang", "standard", 8))
		}
	}
	pair := pairAfter(3, 3)
	// lowSmall: small, team a's job of class low below b3's standard.
	lowSmall := func(lostMin int) func() *scene {
		return func() *scene {
			sc := small(lostMin)()
			sc.jobs[len(sc.jobs)-1].Class = "low"
			return sc
		}
	}
	// overshoot: a holds 20 (demand 28), b 24: both entitled to 22; an
	// 8-GPU job would leave a 6 above and b 6 below (12 from their
	// entitlements instead of 4).
	overshoot := func() *scene {
		return sixNodes().run("a", "a1", "standard", "n1", 8, 1).run("a", "a2", "standard", "n2", 8, 1).
			run("a", "a3", "standard", "n6", 4, 1).run("c", "c1", "standard", "n6", 4, 1).
			run("b", "b1", "standard", "n3", 8, 1).run("b", "b2", "standard", "n4", 8, 1).run("b", "b3", "standard", "n5", 8, 1).
			queue(gpuJob("a", "gang", "standard", 8))
	}
	// level: 24 GPUs, quota 8 each; a and b hold 11 each and want more,
	// c holds 2 and wants no more: a and b are at their entitlement (11)
	// and take nothing from each other, though the gap rule's hysteresis
	// is all that spares b there.
	level := func() *scene {
		return threeTenants().run("a", "a1", "standard", "n1", 8, 1).run("b", "b1", "standard", "n2", 8, 1).
			run("a", "a2", "standard", "n3", 3, 1).run("b", "b2", "standard", "n3", 1, 1).run("b", "b3", "standard", "n3", 2, 1).
			run("c", "c1", "standard", "n3", 2, 1).
			queue(gpuJob("b", "more", "standard", 4)).queue(gpuJob("a", "fair", "standard", 1))
	}
	// held: gang as the real stack reports it: Nomad calls a job the
	// governor holds stopped dead, and it still asks for its 8 GPUs; a
	// finished 8-GPU job of c's asks for nothing (else c would be entitled to
	// 12, a and b to 18).
	held := func() *scene {
		sc := gang()
		sc.jobs[len(sc.jobs)-1].Dead = true
		done := gpuJob("c", "done", "standard", 8)
		done.State, done.Dead = Admitted, true
		return sc.queue(done)
	}
	// tooLarge: gang, with c limited to 8 GPUs and queueing a 16-GPU
	// job: it can never run, so it asks for nothing (else c would be
	// entitled to 8, a and b to 20).
	tooLarge := func() *scene {
		sc := gang()
		sc.tenants[2].Limit["gpu"] = 8
		return sc.queue(gpuJob("c", "huge", "standard", 16))
	}
	// own: a borrows 24 (a3 low) on a full cluster and asks for a
	// standard 8-GPU job at its entitlement (demands a 32, b 16, c 8:
	// entitled 24, 16, 8): no fairness preemption, but its own low job
	// gives way as under the gap rule (the rule once refused any set
	// while the tenant was not below its entitlement, own jobs alone
	// included).
	own := func() *scene {
		return sixNodes().run("a", "a1", "standard", "n1", 8, 1).run("a", "a2", "standard", "n2", 8, 1).
			run("a", "a3", "low", "n3", 8, 1).run("b", "b1", "standard", "n4", 8, 1).run("b", "b2", "standard", "n5", 8, 1).
			run("c", "c1", "standard", "n6", 8, 1).
			queue(gpuJob("a", "hi", "standard", 8))
	}
	// lowGang: gang, team a's job of class low below the victims'
	// standard.
	lowGang := func() *scene {
		sc := gang()
		sc.jobs[len(sc.jobs)-1].Class = "low"
		return sc
	}
	cases := map[string]struct {
		sc      func() *scene
		rule    string
		job     string
		victims []string
		reason  string
		// saves: the running jobs save a checkpoint when stopped.
		saves bool
	}{
		"gap rule: the gang waits":                                                 {sc: gang, job: "a/gang"},
		"entitlement: the gang takes a fresh victim":                               {sc: gang, rule: FairRuleEntitlement, job: "a/gang", victims: []string{"b3<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"entitlement: a held job Nomad calls dead asks":                            {sc: held, rule: FairRuleEntitlement, job: "a/gang", victims: []string{"b3<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"entitlement: a job above its tenant's limit asks for nothing":             {sc: tooLarge, rule: FairRuleEntitlement, job: "a/gang", victims: []string{"b3<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"entitlement: no move that overshoots":                                     {sc: overshoot, rule: FairRuleEntitlement, job: "a/gang"},
		"entitlement: equals at their share take nothing":                          {sc: level, rule: FairRuleEntitlement, job: "a/fair"},
		"gap rule: equals take nothing":                                            {sc: level, job: "a/fair"},
		"gap rule: a borrower's own lower class gives way":                         {sc: own, job: "a/hi", victims: []string{"a3<-a/hi"}},
		"entitlement: a borrower's own lower class gives way, at its entitlement":  {sc: own, rule: FairRuleEntitlement, job: "a/hi", victims: []string{"a3<-a/hi"}},
		"auto: victims that save on stop, by entitlement":                          {sc: gang, rule: FairRuleAuto, saves: true, job: "a/gang", victims: []string{"b3<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"auto: a victim that would lose a minute, by entitlement":                  {sc: small(1), rule: FairRuleAuto, job: "a/small", victims: []string{"b3<-a/small"}, reason: "gpu: uses 16, entitled to 20.0"},
		"auto: a victim that would lose FairCheapLoss, of a class above the job's": {sc: lowSmall(5), rule: FairRuleAuto, job: "a/small", victims: []string{"b3<-a/small"}, reason: "gpu: uses 16, entitled to 20.0"},
		"auto: a victim that would lose more, of a class above the job's: none":    {sc: lowSmall(6), rule: FairRuleAuto, job: "a/small"},
		"entitlement: the victim that would lose more is taken":                    {sc: small(6), rule: FairRuleEntitlement, job: "a/small", victims: []string{"b3<-a/small"}, reason: "gpu: uses 16, entitled to 20.0"},
		"auto: a cheap victim whose tenant would fall below its entitlement":       {sc: gang, rule: FairRuleAuto, job: "a/gang"},
		"auto: cheap victims whose tenant would fall below it together":            {sc: pair, rule: FairRuleAuto, job: "a/gang"},
		"auto: a victim that just checkpointed (FairCrossLoss), its tenant below":  {sc: gangAfter(1), rule: FairRuleAuto, job: "a/gang", victims: []string{"b3<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"auto: a pair that just checkpointed, taken":                               {sc: pairAfter(1, 1), rule: FairRuleAuto, job: "a/gang", victims: []string{"b3<-a/gang", "b5<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"auto: one of the pair lost 2 minutes: the pair is bounded":                {sc: pairAfter(1, 2), rule: FairRuleAuto, job: "a/gang"},
		"entitlement: the pair is taken":                                           {sc: pair, rule: FairRuleEntitlement, job: "a/gang", victims: []string{"b3<-a/gang", "b5<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"auto: the pair saves on stop, taken":                                      {sc: pair, rule: FairRuleAuto, saves: true, job: "a/gang", victims: []string{"b3<-a/gang", "b5<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"auto: a victim that saves on stop, of a class above the job's":            {sc: lowGang, rule: FairRuleAuto, saves: true, job: "a/gang", victims: []string{"b3<-a/gang"}, reason: "gpu: uses 16, entitled to 22.0"},
		"entitlement: no victim of a class above the job's":                        {sc: lowGang, rule: FairRuleEntitlement, saves: true, job: "a/gang"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.FairShareRule = tc.rule
			s := tc.sc().snap()
			markSaving(s, func(j *Job) bool { return tc.saves && j.State == Admitted })
			p := Decide(cfg, s)
			must.Eq(t, tc.victims, victimsOf(p), must.Sprint(p.Verdicts[tc.job].Reason))
			if tc.reason != "" {
				must.Len(t, 1, p.Preemptions)
				must.Eq(t, CauseFairShare, p.Preemptions[0].Cause)
				must.StrContains(t, p.Preemptions[0].Reason, tc.reason)
				must.StrContains(t, p.Preemptions[0].Reason, "closer to the fair shares")
			}
		})
	}
}

// TestEntitlementWithin: a move that takes a victim whose job does not
// save on stop and that lost more than FairCrossLoss keeps the preemptor
// at or below its entitlement and every tenant it takes from at or above
// its own; a move whose victims of other tenants all save or just
// checkpointed is not bounded.
func TestEntitlementWithin(t *testing.T) {
	// a uses 16 of its entitlement 20, b 28 of 22.
	co := &cohort{governed: map[string]bool{"gpu": true}}
	a := &account{usage: quota.Vector{"gpu": 16}, cohort: co}
	b := &account{usage: quota.Vector{"gpu": 28}, cohort: co}
	e := entitlement{a: {"gpu": 20}, b: {"gpu": 22}}
	gpus := func(n int64) quota.Vector { return quota.Vector{"gpu": n} }
	// Each victim lost 3 minutes of work: cheap, but more than
	// FairCrossLoss.
	of := func(acct *account, n int64, saves bool) *victim {
		return &victim{acct: acct, use: gpus(n), saves: saves, work: 3 * time.Minute}
	}
	fresh := func(acct *account, n int64) *victim {
		return &victim{acct: acct, use: gpus(n), work: FairCrossLoss}
	}
	cases := map[string]struct {
		req  int64
		set  []*victim
		want bool
	}{
		"both stay within":                            {req: 4, set: []*victim{of(b, 4, false)}, want: true},
		"to the entitlement on both sides":            {req: 4, set: []*victim{of(b, 6, false)}, want: true},
		"the preemptor would pass its entitlement":    {req: 8, set: []*victim{of(b, 4, false), of(b, 2, false)}},
		"the victim's tenant would fall below it":     {req: 4, set: []*victim{of(b, 8, false)}},
		"two victims that together fall below it":     {req: 4, set: []*victim{of(b, 4, false), of(b, 4, false)}},
		"the preemptor's own victims make room":       {req: 8, set: []*victim{of(a, 4, false), of(b, 4, false)}, want: true},
		"victims that save are not bounded":           {req: 8, set: []*victim{of(b, 8, true)}, want: true},
		"one that does not save bounds the set":       {req: 8, set: []*victim{of(b, 4, true), of(b, 4, false)}},
		"only the preemptor's own, not bounded":       {req: 8, set: []*victim{of(a, 4, false)}, want: true},
		"victims that just checkpointed, not bounded": {req: 8, set: []*victim{fresh(b, 8)}, want: true},
		"one that just did and one that saves":        {req: 8, set: []*victim{fresh(b, 4), of(b, 4, true)}, want: true},
		"one that lost more bounds the set":           {req: 8, set: []*victim{fresh(b, 4), of(b, 4, false)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, e.within(a, gpus(tc.req), tc.set))
		})
	}
}
