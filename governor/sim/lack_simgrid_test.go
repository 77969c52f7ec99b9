//go:build simgrid

package sim

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/shoenig/test/must"
)

// TestShareErrorByCheck splits allot's share error per 10-minute sample
// (as Summarize scores it) into what tenants lack below their entitlement
// and what they hold beyond it, and the lack by the first failing check
// of the tenant's held jobs (shared in proportion to the GPUs they ask
// for); a held job failing quota is split by whether its tenant used less
// than its nominal quota at the sample and, if so, by whether the job
// alone asks for more than that nominal. One line per tenant follows.
// Rows as the grid's (SIMGRID_ROWS, SIMGRID_CLUSTER; docs/simulator.md,
// round 29); SPLIT_ONSTOP=1, SPLIT_RULE, SPLIT_CLASSES and SPLIT_ORDER
// run with checkpoints on stop, fair_share_rule, fair_share_classes and
// queue_order as TestShareErrorSplit's do (unset: the defaults):
//
//	SIMGRID_ROWS=1.2:2,1.5:2 go test -tags simgrid -run '^TestShareErrorByCheck$' -v -timeout 30m ./governor/sim/
func TestShareErrorByCheck(t *testing.T) {
	for _, row := range simgridRows(t) {
		s := row.sim(t)
		m := newLackMeter(s)
		s.onSettle = m.settle
		s.loop()
		sum := Summarize(s.result())
		must.Positive(t, m.entSum)
		got := (m.total(m.under) + m.total(m.over)) / m.entSum
		fmt.Printf("\n%s load %.1f seed %d: share error %.4f (report %.4f)\n", row.cluster, row.load, row.seed, got, sum.ShareError)
		m.print()
		// The split adds up to the report's figure: the same samples,
		// the same fair division.
		must.InDelta(t, sum.ShareError, got, 1e-3)
	}
}

// blockedBy names the first failing check of held job j's latest
// verdict, "" when it passed or has none yet (the scans' split by check).
func (j *jobRun) blockedBy() string {
	return checkName(j.blocked)
}

// checkName is c's name, "" for no check.
func checkName(c *engine.Check) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// gridRow is one load:seed row of SIMGRID_ROWS on SIMGRID_CLUSTER.
type gridRow struct {
	cluster string
	spec    *fleet.Spec
	load    float64
	seed    int64
}

// simgridRows reads the rows to run: SIMGRID_ROWS (comma-separated
// load:seed, default 1.5:2) on SIMGRID_CLUSTER (a file of scenarios/,
// default standard.hcl), as the grid's measurements do.
func simgridRows(t *testing.T) []gridRow {
	cluster := "standard.hcl"
	if name := os.Getenv("SIMGRID_CLUSTER"); name != "" {
		cluster = name
	}
	spec, err := fleet.Load("scenarios/" + cluster)
	must.NoError(t, err)
	rows := os.Getenv("SIMGRID_ROWS")
	if rows == "" {
		rows = "1.5:2"
	}
	pairs, err := ParseLoadSeeds(rows)
	must.NoError(t, err, must.Sprint("SIMGRID_ROWS"))
	out := make([]gridRow, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, gridRow{cluster: cluster, spec: spec, load: p.Load, seed: p.Seed})
	}
	return out
}

// sim generates the row's week as the grid's (StandardWeek; HeteroWeek on
// hetero.hcl) and returns allot's simulation of it with splitOptions, not
// yet run.
func (r gridRow) sim(t *testing.T) *sim {
	p := StandardWeek(r.seed, r.load)
	if r.cluster == "hetero.hcl" {
		p = HeteroWeek(r.seed, r.load)
	}
	sc, err := GenerateWith(r.spec, p)
	must.NoError(t, err)
	s, err := newSim(sc.Spec, sc.Jobs, Allot, splitOptions(t, r.seed))
	must.NoError(t, err)
	return s
}

// splitOptions are the default options with the SPLIT_* settings of the
// environment (SPLIT_STOPDELAY: the simulator's -stop-delay).
func splitOptions(t *testing.T, seed int64) Options {
	opts := DefaultOptions()
	opts.Seed = seed
	opts.CheckpointOnStop = os.Getenv("SPLIT_ONSTOP") != ""
	if v := os.Getenv("SPLIT_RULE"); v != "" {
		opts.Engine.FairShareRule = v
	}
	if v := os.Getenv("SPLIT_CLASSES"); v != "" {
		opts.Engine.FairClasses = v
	}
	if v := os.Getenv("SPLIT_ORDER"); v != "" {
		opts.Engine.QueueOrder = v
	}
	if v := os.Getenv("SPLIT_STOPDELAY"); v != "" {
		d, err := time.ParseDuration(v)
		must.NoError(t, err, must.Sprint("SPLIT_STOPDELAY"))
		opts.StopDelay = d
	}
	return opts
}

// lackMeter accumulates, per sample of the run, each tenant's distance
// from its entitlement and what its held jobs' first failing checks are.
type lackMeter struct {
	s               *sim
	weights, limits []int
	seen            int
	entSum          float64
	under, over     []float64
	// lack holds, per tenant, its lack by the held jobs' failing check.
	lack []map[string]float64
	// also, when set, is called with every sample settle reads within
	// the week and its entitlements (another scan's per-sample split).
	also func(smp Sample, fair []float64)
}

func newLackMeter(s *sim) *lackMeter {
	n := len(s.m.tenants)
	m := &lackMeter{s: s, weights: make([]int, n), limits: make([]int, n), under: make([]float64, n), over: make([]float64, n),
		lack: make([]map[string]float64, n)}
	for i, tn := range s.m.tenants {
		m.weights[i], m.limits[i] = int(s.tenants[tn].Quota["gpu"]), int(s.tenants[tn].Limit["gpu"])
		m.lack[i] = map[string]float64{}
	}
	return m
}

// settle reads the sample the last batch of events took, if any.
func (m *lackMeter) settle() {
	if len(m.s.m.samples) == m.seen {
		return
	}
	m.seen = len(m.s.m.samples)
	smp := m.s.m.samples[m.seen-1]
	if smp.T > Week {
		return
	}
	fair := m.fair(smp)
	held := make([]map[string]int, len(fair))
	heldGPUs := make([]int, len(fair))
	for _, j := range m.s.held {
		i := m.s.m.tIdx[j.w.Tenant]
		if held[i] == nil {
			held[i] = map[string]int{}
		}
		held[i][m.cause(j, smp.Tenant[i], m.weights[i])] += j.w.GPUs()
		heldGPUs[i] += j.w.GPUs()
	}
	for i := range fair {
		m.entSum += fair[i]
		d := fair[i] - float64(smp.Tenant[i])
		if d <= 0 {
			m.over[i] -= d
			continue
		}
		m.under[i] += d
		if heldGPUs[i] == 0 {
			m.lack[i]["(nothing held)"] += d
		}
		for c, g := range held[i] {
			m.lack[i][c] += d * float64(g) / float64(heldGPUs[i])
		}
	}
	if m.also != nil {
		m.also(smp, fair)
	}
}

// fair is each tenant's entitlement at sample smp, as Summarize scores
// it.
func (m *lackMeter) fair(smp Sample) []float64 {
	return FairShare(m.s.m.gpus, m.weights, (&Result{Limit: m.limits}).claim(smp))
}

// cause names held job j's first failing check; quota is split by
// whether its tenant, holding used GPUs of its nominal quota, was below
// that nominal, and then by whether the job alone would fit it.
func (m *lackMeter) cause(j *jobRun, used, nominal int) string {
	switch {
	case j.blockedBy() == "":
		return "(none yet)"
	case j.blockedBy() != "quota":
		return j.blockedBy()
	case used >= nominal:
		return "quota, tenant at or above its nominal"
	case j.w.GPUs() > nominal:
		return "quota, below nominal, job > nominal"
	}
	return "quota, below nominal, job ≤ nominal"
}

func (m *lackMeter) total(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

func (m *lackMeter) print() {
	byCause := map[string]float64{}
	for _, l := range m.lack {
		for c, v := range l {
			byCause[c] += v
		}
	}
	causes := make([]string, 0, len(byCause))
	for c := range byCause {
		causes = append(causes, c)
	}
	sort.Slice(causes, func(a, b int) bool { return byCause[causes[a]] > byCause[causes[b]] })
	fmt.Printf("  lacking %.4f, held beyond %.4f (of the entitled GPU-time)\n", m.total(m.under)/m.entSum, m.total(m.over)/m.entSum)
	for _, c := range causes {
		fmt.Printf("  lacking, held by %-38s %.4f\n", c, byCause[c]/m.entSum)
	}
	for i, tn := range m.s.m.tenants {
		fmt.Printf("  %-10s nominal %4d  lacking %.4f  beyond %.4f\n", tn, m.weights[i], m.under[i]/m.entSum, m.over[i]/m.entSum)
	}
}
