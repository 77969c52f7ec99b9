// Package report renders simulation results: Markdown tables, PNG charts
// and the verdict of the acceptance comparison, and splices them into a
// section of docs/benchmarks.md.
package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/sim"
)

// Run is one policy's run with its summary and wall time.
type Run struct {
	Result  *sim.Result
	Summary sim.Summary
	Wall    time.Duration
	// CPU is the process CPU time the run used.
	CPU time.Duration
}

// Scaling is one measurement of the simulator or the engine at a size.
type Scaling struct {
	Label  string
	Nodes  int
	Jobs   int
	Policy sim.Policy
	Wall   time.Duration
	// SimTime is the simulated time covered.
	SimTime time.Duration
	Cycles  int
	// Cycle is the governor cycle interval; CPU the process CPU time the
	// run used (0 when unknown).
	Cycle time.Duration
	CPU   time.Duration
}

func hours(d time.Duration) string { return fmt.Sprintf("%.2f", d.Hours()) }

// Tables writes the comparison tables of runs.
func Tables(w io.Writer, runs []Run) {
	fmt.Fprintln(w, "| policy | finished | GPU allocation | useful allocation | useful, net of work lost | work delivered | wait mean (h) | wait p95 (h) | p95 wait, tenants within nominal (h) | share error | Jain | preemptions | GPU-h lost | longest wait (h) | JCT p50 (h) | JCT p95 (h) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		s := r.Summary
		fmt.Fprintf(w, "| %s | %d/%d | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %s | %s | %s | %.3f | %.3f | %d | %.0f | %s | %s | %s |\n",
			s.Policy, s.Finished, s.Jobs, 100*s.AllocRate, 100*s.UsefulRate, 100*s.NetUsefulRate, 100*s.Delivered, hours(s.Wait.Mean), hours(s.Wait.P95),
			hours(s.WaitWithinNominal.P95), s.ShareError, s.Jain, s.Preemptions, s.LostGPUHours, hours(s.LongestWait),
			hours(s.Completion.P50), hours(s.Completion.P95))
	}
	fmt.Fprintln(w)
	statsTable(w, "tenant", runs, func(s sim.Summary) map[string]sim.Stats { return s.WaitByTenant })
	statsTable(w, "class", runs, func(s sim.Summary) map[string]sim.Stats { return s.WaitByClass })
	sharesTable(w, runs)
	IdleTable(w, runs)
}

// IdleTable writes the GPU-hours that sat idle while work waited, by
// cause, per policy.
func IdleTable(w io.Writer, runs []Run) {
	fmt.Fprintf(w, "GPU-hours idle while work waited, by cause (share of the span's GPU-hours):\n\n| cause |")
	for _, r := range runs {
		fmt.Fprintf(w, " %s |", r.Summary.Policy)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(runs)))
	row := func(name string, get func(sim.Summary) float64) {
		fmt.Fprintf(w, "| %s |", name)
		for _, r := range runs {
			s := r.Summary
			total := float64(r.Result.GPUs) * s.Span.Hours()
			v := get(s)
			pct := 0.0
			if total > 0 {
				pct = 100 * v / total
			}
			fmt.Fprintf(w, " %.0f (%.1f %%) |", v, pct)
		}
		fmt.Fprintln(w)
	}
	for _, c := range sim.IdleCauses() {
		name := c.String()
		row(name, func(s sim.Summary) float64 { return s.IdleWhileWaiting[name] })
	}
	row("**total**", func(s sim.Summary) float64 { return s.IdleWaitingTotal })
	row("work lost to preemption", func(s sim.Summary) float64 { return s.LostGPUHours })
	fmt.Fprintln(w)
}

func statsTable(w io.Writer, by string, runs []Run, get func(sim.Summary) map[string]sim.Stats) {
	keys := map[string]bool{}
	for _, r := range runs {
		for k := range get(r.Summary) {
			keys[k] = true
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "Queue wait by %s, hours (mean / p50 / p95 / p99):\n\n| %s |", by, by)
	for _, r := range runs {
		fmt.Fprintf(w, " %s |", r.Summary.Policy)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(runs)))
	for _, k := range names {
		fmt.Fprintf(w, "| %s |", k)
		for _, r := range runs {
			st := get(r.Summary)[k]
			fmt.Fprintf(w, " %s / %s / %s / %s |", hours(st.Mean), hours(st.P50), hours(st.P95), hours(st.P99))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func sharesTable(w io.Writer, runs []Run) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "GPU-hours received / entitled per tenant (entitlement: weighted max-min fair share of the demand, each tenant's capped at its limit, weights = nominal quota):\n\n| tenant | nominal GPUs | offered load | within nominal |")
	for _, r := range runs {
		fmt.Fprintf(w, " %s |", r.Summary.Policy)
	}
	fmt.Fprintf(w, "\n|---|---:|---:|---|%s\n", strings.Repeat("---:|", len(runs)))
	for i, sh := range runs[0].Summary.Shares {
		fmt.Fprintf(w, "| %s | %d | %.1f %% | %v |", sh.Tenant, sh.Nominal, 100*sh.Offered, sh.WithinNominal)
		for _, r := range runs {
			x := r.Summary.Shares[i]
			fmt.Fprintf(w, " %.0f / %.0f |", x.Received, x.Entitled)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// Verdict states, from the numbers, whether allot beats nomad-fifo on the
// acceptance criteria.
func Verdict(runs []Run) string {
	by := map[sim.Policy]sim.Summary{}
	best := 0.0
	for _, r := range runs {
		by[r.Summary.Policy] = r.Summary
		if r.Summary.AllocRate > best {
			best = r.Summary.AllocRate
		}
	}
	a, okA := by[sim.Allot]
	f, okF := by[sim.NomadFIFO]
	if !okA || !okF {
		return "The verdict needs both allot and nomad-fifo runs."
	}
	mark := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	return fmt.Sprintf("- p95 wait of tenants within their nominal quota: allot %s h vs nomad-fifo %s h — allot better: %s\n"+
		"- share-vs-entitlement error: allot %.3f vs nomad-fifo %.3f — allot better: %s\n"+
		"- GPU allocation rate: allot %.1f %% vs best policy %.1f %% — within 2 points: %s\n",
		hours(a.WaitWithinNominal.P95), hours(f.WaitWithinNominal.P95), mark(a.WaitWithinNominal.P95 < f.WaitWithinNominal.P95),
		a.ShareError, f.ShareError, mark(a.ShareError < f.ShareError),
		100*a.AllocRate, 100*best, mark(best-a.AllocRate <= 0.02))
}

// ScalingTable writes the scaling measurements.
func ScalingTable(w io.Writer, rows []Scaling) {
	fmt.Fprintln(w, "| run | nodes | jobs | policy | cycle | wall (s) | CPU (s) | simulated (h) | jobs / s (wall) | simulated s / wall s | governor cycles |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %s | %v | %.1f | %.1f | %.0f | %.0f | %.0f | %d |\n", r.Label, r.Nodes, r.Jobs, r.Policy, r.Cycle,
			r.Wall.Seconds(), r.CPU.Seconds(), r.SimTime.Hours(), float64(r.Jobs)/r.Wall.Seconds(), r.SimTime.Seconds()/r.Wall.Seconds(), r.Cycles)
	}
	fmt.Fprintln(w)
}

// Plots renders the allocation-rate and wait-CDF charts of runs into dir
// and returns the file names written.
func Plots(dir string, runs []Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	charts := map[string]*Chart{
		"sim-allocation.png": allocChart(runs),
		"sim-wait-cdf.png":   waitChart(runs),
	}
	names := []string{"sim-allocation.png", "sim-wait-cdf.png"}
	for _, n := range names {
		var buf bytes.Buffer
		if err := charts[n].WritePNG(&buf); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, n), buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
	}
	return names, nil
}

func allocChart(runs []Run) *Chart {
	c := &Chart{Title: "GPU allocation rate (hourly mean)", XLabel: "simulated time (h)", YLabel: "% allocated", YMax: 100}
	for _, r := range runs {
		s := Series{Name: string(r.Summary.Policy)}
		var acc float64
		n := 0
		for _, smp := range r.Result.Samples {
			if smp.T > r.Summary.Span {
				break
			}
			acc += float64(smp.Allocated) / float64(r.Result.GPUs)
			n++
			if smp.T%time.Hour == 0 && n > 0 {
				s.X, s.Y = append(s.X, smp.T.Hours()), append(s.Y, 100*acc/float64(n))
				acc, n = 0, 0
			}
		}
		c.Series = append(c.Series, s)
	}
	return c
}

func waitChart(runs []Run) *Chart {
	c := &Chart{Title: "Queue wait CDF (jobs that started; x up to the largest p99)", XLabel: "wait (h)", YLabel: "% of jobs", YMax: 100}
	xmax := 0.0
	for _, r := range runs {
		if p := r.Summary.Wait.P99.Hours(); p > xmax {
			xmax = p
		}
	}
	for _, r := range runs {
		var ws []float64
		for _, j := range r.Result.Jobs {
			if w, ok := j.Wait(); ok {
				ws = append(ws, w.Hours())
			}
		}
		sort.Float64s(ws)
		s := Series{Name: string(r.Summary.Policy)}
		for i := 0; i < len(ws) && ws[i] <= xmax; i += max1(len(ws) / 400) {
			s.X, s.Y = append(s.X, ws[i]), append(s.Y, 100*float64(i+1)/float64(len(ws)))
		}
		c.Series = append(c.Series, s)
	}
	return c
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// ReplaceSection replaces the body of the "## <heading>" section of doc
// (up to the next "## " heading) with body, or appends the section.
func ReplaceSection(doc []byte, heading string, body []byte) []byte {
	lines := strings.SplitAfter(string(doc), "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimRight(l, "\n")
		if start < 0 && t == "## "+heading {
			start = i
			continue
		}
		if start >= 0 && strings.HasPrefix(t, "## ") {
			end = i
			break
		}
	}
	sec := "## " + heading + "\n\n" + strings.TrimRight(string(body), "\n") + "\n"
	if start < 0 {
		out := strings.TrimRight(string(doc), "\n")
		if out != "" {
			out += "\n\n"
		}
		return []byte(out + sec)
	}
	if end < len(lines) {
		sec += "\n"
	}
	return []byte(strings.Join(lines[:start], "") + sec + strings.Join(lines[end:], ""))
}
