package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
)

// SweepPoint is every policy's summary at one offered load.
type SweepPoint struct {
	Load      float64
	GPUs      int
	Summaries []sim.Summary
}

// Sweep runs the three policies on the standard scenario at each offered
// load (one seed).
func Sweep(cfg Config, spec *fleet.Spec, say func(string, ...any)) ([]SweepPoint, error) {
	var out []SweepPoint
	for _, load := range cfg.SweepLoads {
		say("load sweep: %.1f", load)
		sc, err := sim.Generate(spec, cfg.Seed, cfg.Jobs, cfg.Span, load)
		if err != nil {
			return nil, err
		}
		opts := sim.DefaultOptions()
		opts.Seed = cfg.Seed
		runs, err := Compare(sc, opts)
		if err != nil {
			return nil, err
		}
		pt := SweepPoint{Load: load, GPUs: spec.GPUs()}
		for _, r := range runs {
			pt.Summaries = append(pt.Summaries, r.Summary)
		}
		out = append(out, pt)
	}
	return out, nil
}

// SweepTable writes the load sweep's headline metrics.
func SweepTable(w io.Writer, pts []SweepPoint) {
	fmt.Fprintln(w, "| offered load | policy | useful allocation | useful, net of work lost | work delivered | wait mean (h) | p95 wait within nominal (h) | share error | Jain | GPU-h lost | idle while waiting |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, pt := range pts {
		for _, s := range pt.Summaries {
			idle := 0.0
			if gpuH := float64(pt.GPUs) * s.Span.Hours(); gpuH > 0 {
				idle = 100 * s.IdleWaitingTotal / gpuH
			}
			fmt.Fprintf(w, "| %.1f | %s | %.1f %% | %.1f %% | %.1f %% | %s | %s | %.3f | %.3f | %.0f | %.1f %% |\n", pt.Load, s.Policy,
				100*s.UsefulRate, 100*s.NetUsefulRate, 100*s.Delivered, hours(s.Wait.Mean), hours(s.WaitWithinNominal.P95), s.ShareError, s.Jain, s.LostGPUHours, idle)
		}
	}
	fmt.Fprintln(w)
}

// SweepPlots writes the load sweep's charts (useful allocation, share
// error, p95 wait within nominal, per policy) and returns their names.
func SweepPlots(dir string, pts []SweepPoint) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	metric := func(title, ylabel string, get func(sim.Summary) float64) *Chart {
		c := &Chart{Title: title, XLabel: "offered load", YLabel: ylabel}
		if len(pts) == 0 {
			return c
		}
		for i, s := range pts[0].Summaries {
			ser := Series{Name: string(s.Policy)}
			for _, pt := range pts {
				ser.X, ser.Y = append(ser.X, pt.Load), append(ser.Y, get(pt.Summaries[i]))
			}
			c.Series = append(c.Series, ser)
		}
		return c
	}
	charts := []struct {
		name  string
		chart *Chart
	}{
		{"sim-sweep-useful.png", metric("Useful GPU allocation vs offered load", "% of GPUs", func(s sim.Summary) float64 { return 100 * s.UsefulRate })},
		{"sim-sweep-share-error.png", metric("Share error vs offered load (0 = fair)", "share error", func(s sim.Summary) float64 { return s.ShareError })},
		{"sim-sweep-wait.png", metric("p95 wait of tenants within nominal vs offered load", "hours", func(s sim.Summary) float64 { return s.WaitWithinNominal.P95.Hours() })},
	}
	var names []string
	for _, c := range charts {
		var buf bytes.Buffer
		if err := c.chart.WritePNG(&buf); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, c.name), buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		names = append(names, c.name)
	}
	return names, nil
}
