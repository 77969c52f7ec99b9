package idle

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// truth is one allocation's real utilization per period, and whether its
// telemetry reached the governor that period.
type truth struct {
	util    []float64
	missing []bool
}

// randomTruth alternates busy and idle stretches of random length; dropouts
// of 1 or 2 consecutive periods fall anywhere.
func randomTruth(r *rand.Rand, periods int) truth {
	tr := truth{util: make([]float64, periods), missing: make([]bool, periods)}
	busy := r.Intn(2) == 0
	for n := 0; n < periods; {
		run := 1 + r.Intn(12)
		for k := 0; k < run && n < periods; k, n = k+1, n+1 {
			if busy {
				tr.util[n] = 6 + r.Float64()*94
			} else {
				tr.util[n] = r.Float64() * 5
			}
		}
		busy = !busy
	}
	for n := 0; n < periods; n++ {
		if r.Intn(8) == 0 {
			tr.missing[n] = true
			if n+1 < periods && r.Intn(2) == 0 {
				n++
				tr.missing[n] = true
			}
			n++ // at most 2 consecutive
		}
	}
	return tr
}

// idleFor reports whether the real utilization was at or below the
// threshold in every period of [from, to].
func (tr truth) idleFor(from, to int, pct float64) bool {
	if from < 0 {
		return false
	}
	for n := from; n <= to; n++ {
		if tr.util[n] > pct {
			return false
		}
	}
	return true
}

// TestNoFalsePositives: over 100 randomized runs (20 allocations, 200
// periods, dropouts of up to 2 periods), every warning follows a real idle
// stretch of the whole window and of the grace up to the notice (busy
// again inside it, or a dropout, starts over: never warned); every reclaim
// follows a warning at least the notice earlier and a real idle stretch of
// the whole grace (a dropout after the warning restarts the grace, so work
// hidden in it is followed by a full idle grace before any stop).
// Allocations idle and seen through the window and the grace up to the
// notice are warned by the end of it.
func TestNoFalsePositives(t *testing.T) {
	p := testPolicy()
	w, g, nt := int(p.Window/period), int(p.Grace/period), int(p.Notice/period)
	toWarn := w + g - nt // idle periods before the warning
	var warns, reclaims, expected, hidden, suspects int
	for run := 0; run < 100; run++ {
		r := rand.New(rand.NewSource(int64(run)))
		const allocs, periods = 20, 200
		truths := make([]truth, allocs)
		for a := range truths {
			truths[a] = randomTruth(r, periods)
		}
		d := NewDetector()
		warnedAt := map[string]int{}
		ten := func(string) Tenant { return Tenant{Policy: p} }
		for n := 0; n < periods; n++ {
			obs := make([]Observation, 0, allocs)
			for a, tr := range truths {
				s := Sample{At: t0.Add(time.Duration(n) * period), Known: !tr.missing[n], UtilPct: tr.util[n], MemoryMiB: 20000}
				obs = append(obs, Observation{Watch: Watch{AllocID: fmt.Sprint(a), Namespace: "ml", JobID: fmt.Sprint(a), Devices: 1}, Sample: s})
			}
			for _, e := range d.Tick(obs, ten) {
				a := 0
				fmt.Sscan(e.Candidate.AllocID, &a)
				switch e.Kind {
				case Suspect:
					suspects++
					must.True(t, truths[a].idleFor(n-w, n, p.ThresholdPct), must.Sprintf("run %d alloc %d suspect at %d", run, a, n))
				case Warn:
					warns++
					warnedAt[e.Candidate.AllocID] = n
					must.True(t, truths[a].idleFor(n-toWarn, n, p.ThresholdPct), must.Sprintf("run %d alloc %d warned at %d", run, a, n))
				case Reclaim:
					reclaims++
					must.True(t, truths[a].idleFor(n-g, n, p.ThresholdPct), must.Sprintf("run %d alloc %d reclaimed at %d", run, a, n))
					if !truths[a].idleFor(warnedAt[e.Candidate.AllocID], n, p.ThresholdPct) {
						hidden++ // worked unseen in a dropout after the warning; the grace restarted
					}
					must.True(t, n-warnedAt[e.Candidate.AllocID] >= nt, must.Sprint("warned at least the notice before the stop"))
					d.Reclaimed(e.Candidate.AllocID)
				}
			}
			// liveness: idle and seen for window+grace−notice+1 samples in a row → warned
			for a, tr := range truths {
				if n >= toWarn && tr.idleFor(n-toWarn, n, p.ThresholdPct) && !anyMissing(tr, n-toWarn, n) {
					expected++
					_, ok := warnedAt[fmt.Sprint(a)]
					must.True(t, ok, must.Sprintf("run %d alloc %d idle and seen %d..%d but not warned", run, a, n-toWarn, n))
				}
			}
		}
	}
	t.Logf("suspects %d, warnings %d, reclaims %d (%d after unseen work in a dropout, each followed by a full idle grace), idle stretches that had to be warned %d",
		suspects, warns, reclaims, hidden, expected)
	must.Less(t, suspects, warns, must.Sprint("some suspects turn busy (or go unseen) before their warning and are never warned"))
	must.Positive(t, warns)
	must.Positive(t, reclaims)
}

func anyMissing(tr truth, from, to int) bool {
	for n := from; n <= to; n++ {
		if tr.missing[n] {
			return true
		}
	}
	return false
}
