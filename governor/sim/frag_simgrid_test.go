//go:build simgrid

package sim

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// wholeNode is the GPUs of one standard node: an allocation that asks
// for this many needs a node of its own.
const wholeNode = 8

// TestFragmentationByWaiting measures what waits while allot's GPUs sit
// free in fragments (the report's IdleWhileWaiting "fragmentation": free
// GPUs that no waiting job fits, even ignoring every governor rule). Per
// 10-minute sample with fragmentation it records whether only jobs of
// whole-node allocations (wholeNode GPUs each) waited, the first failing
// checks of those jobs, whether fewer than wholeNode GPUs or fewer than
// every waiting job asks for were free in all (no packing or move could
// use them), and how the free GPUs lay on the nodes. Rows and
// settings as TestShareErrorByCheck's (docs/simulator.md, round 30):
//
//	SPLIT_ONSTOP=1 SPLIT_RULE=entitlement SPLIT_CLASSES=any SIMGRID_ROWS=1.2:2 go test -tags simgrid -run '^TestFragmentationByWaiting$' -v -timeout 30m ./governor/sim/
func TestFragmentationByWaiting(t *testing.T) {
	for _, row := range simgridRows(t) {
		s := row.sim(t)
		m := &fragMeter{s: s}
		s.onSettle = m.settle
		s.loop()
		sum := Summarize(s.result())
		fmt.Printf("\n%s load %.1f seed %d: share error %.4f, fragmentation %.0f GPU-h (report %.0f)\n",
			row.cluster, row.load, row.seed, sum.ShareError, m.hours(sum.Span, nil), sum.IdleWhileWaiting[IdleFragmentation.String()])
		m.print(sum.Span)
		// The same samples as the report's: the totals agree.
		must.InDelta(t, sum.IdleWhileWaiting[IdleFragmentation.String()], m.hours(sum.Span, nil), 1e-6)
	}
}

// fragSample is one sample with fragmented free GPUs.
type fragSample struct {
	t    time.Duration
	frag int
	// wholeOnly: every waiting job asks for whole-node allocations;
	// tooBig: every waiting job asks for more GPUs than are free in all.
	wholeOnly, tooBig bool
	// checks are the first failing checks of the waiting whole-node jobs.
	checks map[string]bool
	// free counts, by free GPUs on a node (1 to wholeNode), those GPUs;
	// idle is all free GPUs.
	free [wholeNode + 1]int
	idle int
}

type fragMeter struct {
	s       *sim
	seen    int
	samples []fragSample
	dt      float64 // hours between samples
}

// settle records the sample the last batch of events took, if it has
// fragmented free GPUs.
func (m *fragMeter) settle() {
	if len(m.s.m.samples) == m.seen {
		return
	}
	m.seen = len(m.s.m.samples)
	if m.seen == 2 {
		m.dt = (m.s.m.samples[1].T - m.s.m.samples[0].T).Hours()
	}
	smp := m.s.m.samples[m.seen-1]
	if smp.Idle[IdleFragmentation] == 0 {
		return
	}
	f := fragSample{t: smp.T, frag: smp.Idle[IdleFragmentation], wholeOnly: true, checks: map[string]bool{}}
	waiting := m.s.waiting()
	for _, j := range waiting {
		per := 0
		for _, g := range j.w.Groups {
			if g.GPUs > per {
				per = g.GPUs
			}
		}
		if per < wholeNode {
			f.wholeOnly = false
			continue
		}
		f.checks[j.blockedBy()] = true
	}
	for _, nd := range m.s.nodes {
		n := nd.freeGPUs()
		if n > 0 && n <= wholeNode {
			f.free[n] += n
		}
		f.idle += n
	}
	f.tooBig = true
	for _, j := range waiting {
		if j.w.GPUs() <= f.idle {
			f.tooBig = false
		}
	}
	m.samples = append(m.samples, f)
}

// hours sums the fragmented GPU-hours of the samples within span that
// keep (nil: all).
func (m *fragMeter) hours(span time.Duration, keep func(*fragSample) bool) float64 {
	var h float64
	for i := range m.samples {
		if f := &m.samples[i]; f.t <= span && (keep == nil || keep(f)) {
			h += float64(f.frag) * m.dt
		}
	}
	return h
}

func (m *fragMeter) print(span time.Duration) {
	all := m.hours(span, nil)
	if all == 0 {
		return
	}
	fmt.Printf("  while only whole-node jobs (%d GPUs per allocation) waited: %.2f\n", wholeNode,
		m.hours(span, func(f *fragSample) bool { return f.wholeOnly })/all)
	fmt.Printf("  while fewer than %d GPUs were free in all (no whole node however packed): %.2f\n", wholeNode,
		m.hours(span, func(f *fragSample) bool { return f.idle < wholeNode })/all)
	fmt.Printf("  while every waiting job asked for more GPUs than were free in all: %.2f\n",
		m.hours(span, func(f *fragSample) bool { return f.tooBig })/all)
	checks := map[string]bool{}
	for _, f := range m.samples {
		for c := range f.checks {
			checks[c] = true
		}
	}
	names := make([]string, 0, len(checks))
	for c := range checks {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		fmt.Printf("  while a whole-node job held by %-8q waited: %.2f\n", c,
			m.hours(span, func(f *fragSample) bool { return f.checks[c] })/all)
	}
	var free [wholeNode + 1]float64
	var sum float64
	for _, f := range m.samples {
		if f.t > span {
			continue
		}
		for n, g := range f.free {
			free[n] += float64(g)
			sum += float64(g)
		}
	}
	for n := 1; n <= wholeNode; n++ {
		fmt.Printf("  free GPUs on nodes with %d free: %.2f\n", n, free[n]/sum)
	}
}
