package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
)

// Config says what the benchmark report runs.
type Config struct {
	// Cluster is the cluster file of the standard scenario.
	Cluster string
	Seed    int64
	// Jobs, Span and Load define the standard scenario's workload.
	Jobs int
	Span time.Duration
	Load float64
	// ScaleNodes and ScaleJobs define the large simulation (0 skips it);
	// EngineNodes the cluster sizes the engine cycle is timed at.
	ScaleNodes, ScaleJobs int
	// ScaleCycle is the governor cycle interval of the large simulation.
	ScaleCycle  time.Duration
	EngineNodes []int
	// ExtraSeeds repeat the standard scenario with other seeds (workload
	// and placement) to show how much the comparison varies.
	ExtraSeeds []int64
	// SweepLoads are the offered loads of the load sweep (empty skips it).
	SweepLoads []float64
	// PlotDir is where charts go; PlotLink how the Markdown links them.
	PlotDir, PlotLink string
	// Command is the command line that produced the report (printed).
	Command string
	// Progress receives one line per step; may be nil.
	Progress io.Writer
}

// Compare runs every policy on spec with the same jobs and options.
func Compare(sc *sim.Scenario, opts sim.Options) ([]Run, error) {
	var runs []Run
	for _, p := range sim.Policies() {
		start, cpu := time.Now(), cpuTime()
		r, err := sim.Run(sc.Spec, sc.Jobs, p, opts)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p, err)
		}
		runs = append(runs, Run{Result: r, Summary: sim.Summarize(r), Wall: time.Since(start), CPU: cpuTime() - cpu})
	}
	return runs, nil
}

// Benchmarks runs the standard scenario, the large simulation and the
// engine timings and returns the Markdown of the report section.
func Benchmarks(cfg Config) ([]byte, error) {
	say := func(f string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, f+"\n", a...)
		}
	}
	spec, err := fleet.Load(cfg.Cluster)
	if err != nil {
		return nil, err
	}
	sc, err := sim.Generate(spec, cfg.Seed, cfg.Jobs, cfg.Span, cfg.Load)
	if err != nil {
		return nil, err
	}
	opts := sim.DefaultOptions()
	opts.Seed = cfg.Seed
	say("standard scenario: %s, %d jobs", spec, len(sc.Jobs))
	runs, err := Compare(sc, opts)
	if err != nil {
		return nil, err
	}
	plots, err := Plots(cfg.PlotDir, runs)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Produced by `%s` (`make bench-sim`; seed %d). Cluster: `%s` — %s, %d GPUs. Workload: %d generated jobs over %v at %.0f %% offered GPU load (distributions: docs/simulator.md).\n\n",
		cfg.Command, cfg.Seed, cfg.Cluster, spec, spec.GPUs(), len(sc.Jobs), cfg.Span, 100*cfg.Load)
	fmt.Fprintf(&b, "### Three policies on the standard scenario\n\n")
	Tables(&b, runs)
	fmt.Fprintf(&b, "Acceptance comparison (computed from the table above):\n\n%s\n", Verdict(runs))
	if err := seedTable(&b, cfg, spec, say); err != nil {
		return nil, err
	}
	for _, p := range plots {
		fmt.Fprintf(&b, "![%s](%s)\n\n", p, filepath.ToSlash(filepath.Join(cfg.PlotLink, p)))
	}
	if len(cfg.SweepLoads) > 0 {
		pts, err := Sweep(cfg, spec, say)
		if err != nil {
			return nil, err
		}
		names, err := SweepPlots(cfg.PlotDir, pts)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "### Load sweep\n\nThe standard scenario (seed %d) at each offered load; \"idle while waiting\" is the share of the span's GPU-hours that sat free (or held by partly placed jobs) while work waited (causes: docs/simulator.md).\n\n", cfg.Seed)
		SweepTable(&b, pts)
		for _, p := range names {
			fmt.Fprintf(&b, "![%s](%s)\n\n", p, filepath.ToSlash(filepath.Join(cfg.PlotLink, p)))
		}
	}
	var scaling []Scaling
	for _, r := range runs {
		scaling = append(scaling, Scaling{Label: "standard", Cycle: opts.CycleInterval, Nodes: r.Result.Nodes, Jobs: len(r.Result.Jobs),
			Policy: r.Summary.Policy, Wall: r.Wall, CPU: r.CPU, SimTime: r.Result.End, Cycles: r.Result.Cycles})
	}
	if cfg.ScaleNodes > 0 {
		more, err := scaleRuns(cfg, say)
		if err != nil {
			return nil, err
		}
		scaling = append(scaling, more...)
	}
	fmt.Fprintf(&b, "### Simulator scaling\n\nWall and CPU time of each run on this machine (2 cores, shared with other builds and tests while it ran: the CPU column is the steadier figure). \"simulated\" runs until the last job ends; \"cycle\" is the shortest time between governor cycles.\n\n")
	ScalingTable(&b, scaling)
	if len(cfg.EngineNodes) > 0 {
		rows, err := engineTimes(cfg, say)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "### Engine cycle on simulated clusters\n\n")
		fmt.Fprintf(&b, "`engine.Decide` (default governor configuration) on the state of a nomad-fifo run of the scaled cluster (%d jobs per 1,000 nodes per %v, %.0f %% offered load) after 3 simulated days, jobs with nothing placed queued, running ones admitted: median of 5 cycles.\n\n",
			perNodeJobs(cfg), cfg.Span, 100*engineLoad)
		fmt.Fprintln(&b, "| nodes | GPUs | live allocations | queued jobs | ms / cycle (median of 5) | decisions |")
		fmt.Fprintln(&b, "|---:|---:|---:|---:|---:|---:|")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %d | %d | %d | %d | %.1f | %d |\n", r.nodes, r.gpus, r.allocs, r.queued, r.ms, r.admitted)
		}
		fmt.Fprintln(&b)
	}
	return b.Bytes(), nil
}

func scaleRuns(cfg Config, say func(string, ...any)) ([]Scaling, error) {
	spec, err := fleet.Load(cfg.Cluster)
	if err != nil {
		return nil, err
	}
	spec.Scale(cfg.ScaleNodes)
	sc, err := sim.Generate(spec, cfg.Seed, cfg.ScaleJobs, cfg.Span, cfg.Load)
	if err != nil {
		return nil, err
	}
	opts := sim.DefaultOptions()
	opts.Seed = cfg.Seed
	if cfg.ScaleCycle > 0 {
		opts.CycleInterval = cfg.ScaleCycle
	}
	var out []Scaling
	for _, p := range sim.Policies() {
		say("scale run: %d nodes, %d jobs, %s", cfg.ScaleNodes, cfg.ScaleJobs, p)
		start, cpu := time.Now(), cpuTime()
		r, err := sim.Run(spec, sc.Jobs, p, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, Scaling{Label: "scale", Cycle: opts.CycleInterval, Nodes: r.Nodes, Jobs: len(r.Jobs), Policy: p,
			Wall: time.Since(start), CPU: cpuTime() - cpu,
			SimTime: r.End, Cycles: r.Cycles})
	}
	return out, nil
}

// engineLoad is the offered load of the engine timings: above capacity,
// so a backlog is queued when the snapshot is taken.
const engineLoad = 1.5

type engineRow struct {
	nodes, gpus, allocs, queued, admitted int
	ms                                    float64
}

func engineTimes(cfg Config, say func(string, ...any)) ([]engineRow, error) {
	var rows []engineRow
	for _, n := range cfg.EngineNodes {
		spec, err := fleet.Load(cfg.Cluster)
		if err != nil {
			return nil, err
		}
		spec.Scale(n)
		jobs := perNodeJobs(cfg) * n / 1000
		sc, err := sim.Generate(spec, cfg.Seed, jobs, cfg.Span, engineLoad)
		if err != nil {
			return nil, err
		}
		say("engine timing: %d nodes, %d jobs", n, jobs)
		snap, err := sim.SnapshotAt(spec, sc.Jobs, 72*time.Hour, sim.DefaultOptions())
		if err != nil {
			return nil, err
		}
		row := engineRow{nodes: n, gpus: spec.GPUs(), allocs: len(snap.Allocs)}
		for _, j := range snap.Jobs {
			if j.State == engine.Queued {
				row.queued++
			}
		}
		var times []time.Duration
		for i := 0; i < 5; i++ {
			start := time.Now()
			plan := engine.Decide(sim.DefaultEngine(), snap)
			times = append(times, time.Since(start))
			row.admitted = len(plan.Decisions)
		}
		row.ms = float64(sim.NewStats(times).P50) / float64(time.Millisecond)
		rows = append(rows, row)
	}
	return rows, nil
}

// perNodeJobs is the workload size per 1,000 nodes of the engine timings:
// the large simulation's density, or the standard scenario's.
func perNodeJobs(cfg Config) int {
	if cfg.ScaleNodes > 0 {
		return cfg.ScaleJobs * 1000 / cfg.ScaleNodes
	}
	return cfg.Jobs * 1000 / 64
}

// cpuTime is the CPU time (user + system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedTable reruns the standard scenario with other seeds and tabulates
// the acceptance metrics.
func seedTable(w io.Writer, cfg Config, spec *fleet.Spec, say func(string, ...any)) error {
	if len(cfg.ExtraSeeds) == 0 {
		return nil
	}
	fmt.Fprintf(w, "The same comparison with other seeds (workload and placement):\n\n")
	fmt.Fprintln(w, "| seed | policy | GPU allocation | work delivered | p95 wait within nominal (h) | share error | preemptions | GPU-h lost |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, seed := range cfg.ExtraSeeds {
		say("standard scenario, seed %d", seed)
		sc, err := sim.Generate(spec, seed, cfg.Jobs, cfg.Span, cfg.Load)
		if err != nil {
			return err
		}
		opts := sim.DefaultOptions()
		opts.Seed = seed
		runs, err := Compare(sc, opts)
		if err != nil {
			return err
		}
		for _, r := range runs {
			s := r.Summary
			fmt.Fprintf(w, "| %d | %s | %.1f %% | %.1f %% | %s | %.3f | %d | %.0f |\n", seed, s.Policy, 100*s.AllocRate,
				100*s.Delivered, hours(s.WaitWithinNominal.P95), s.ShareError, s.Preemptions, s.LostGPUHours)
		}
	}
	fmt.Fprintln(w)
	return nil
}
