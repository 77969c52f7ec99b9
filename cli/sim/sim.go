// Package sim implements `allotctl sim`: run the scheduling simulator
// (governor/sim) on a cluster file and a generated or recorded workload,
// write generated traces, and produce the benchmark report.
package sim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	gsim "github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/report"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// DefaultCluster is the standard scenario's cluster file, relative to the
// repository root.
const DefaultCluster = "governor/sim/scenarios/standard.hcl"

// Command returns `sim`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "simulate scheduling policies on a cluster file and a workload",
		Description: "Replays a workload on a simulated cluster under nomad-fifo, nomad-priority and allot\n" +
			"(the governor's real engine). See docs/simulator.md.\n" +
			"  allotctl sim run\n  allotctl sim run -trace jobs.csv -policies allot,nomad-fifo\n" +
			"  allotctl sim generate -jobs 20000 -nodes 1000 -out week.jsonl\n  allotctl sim report",
		Subcommands: []*cli.Command{runCommand(), generateCommand(), reportCommand()},
	}
}

func workloadFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cluster", Value: DefaultCluster, Usage: "cluster file (node kinds from inventories, tenants)"},
		&cli.IntFlag{Name: "nodes", Usage: "scale the cluster to about this many nodes (0: as in the file)"},
		&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the generator and the placement model"},
		&cli.IntFlag{Name: "jobs", Value: 5000, Usage: "generated jobs"},
		&cli.DurationFlag{Name: "span", Value: gsim.Week, Usage: "generated submissions span"},
		&cli.Float64Flag{Name: "load", Value: 0.9, Usage: "offered GPU load of the generated workload (fraction of capacity)"},
		&cli.IntFlag{Name: "max-gpus", Usage: "cap the GPUs of a generated job (0: no cap)"},
		&cli.IntFlag{Name: "services", Usage: "add this many long-running 1-GPU services to the generated workload"},
	}
}

// scenario loads the cluster and generates (or, with -trace, reads) jobs.
func scenario(c *cli.Context) (*gsim.Scenario, error) {
	if c.NArg() > 0 {
		return nil, cmdutil.UsageError(c, "unexpected arguments: %s", strings.Join(c.Args().Slice(), " "))
	}
	spec, err := fleet.Load(c.String("cluster"))
	if err != nil {
		return nil, err
	}
	if n := c.Int("nodes"); n < 0 {
		return nil, cmdutil.UsageError(c, "-nodes %d must be ≥ 0", n)
	} else if n > 0 {
		spec.Scale(n)
	}
	if tr := c.String("trace"); tr != "" {
		jobs, err := workload.ReadFile(tr)
		if err != nil {
			return nil, err
		}
		return &gsim.Scenario{Spec: spec, Jobs: jobs}, nil
	}
	if c.Int("max-gpus") < 0 || c.Int("services") < 0 {
		return nil, cmdutil.UsageError(c, "-max-gpus and -services must be ≥ 0")
	}
	return gsim.GenerateWith(spec, workload.Params{Seed: c.Int64("seed"), Jobs: c.Int("jobs"), Span: c.Duration("span"),
		Load: c.Float64("load"), MaxGPUs: c.Int("max-gpus"), Services: c.Int("services")})
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "simulate the policies side by side and print their metrics",
		Flags: append(workloadFlags(),
			&cli.StringFlag{Name: "trace", Usage: "read jobs from this trace (.csv, or .jsonl) instead of generating them"},
			&cli.StringFlag{Name: "policies", Value: "nomad-fifo,nomad-priority,allot", Usage: "comma list of policies"},
			&cli.DurationFlag{Name: "cycle", Value: 10 * time.Second, Usage: "shortest time between governor cycles (allot)"},
			&cli.DurationFlag{Name: "starvation-timeout", Usage: "override the engine's starvation timeout (allot; default: the governor's)"},
			&cli.DurationFlag{Name: "requeue-rest", Usage: "override the engine's requeue rest (allot; default: the governor's, none; see docs/governor.md)"},
			&cli.DurationFlag{Name: "fair-min-run", Usage: "override how long a job must have run before a fair-share preemption may take it (allot; default: the governor's, 2m; see docs/governor.md)"},
			&cli.StringFlag{Name: "reclaim", Usage: "override which borrowers a reclaim may take: any or checkpointed (allot; default: the governor's, checkpointed, or any with -reclaim-max-loss; see docs/governor.md)"},
			&cli.DurationFlag{Name: "reclaim-max-loss", Usage: "override the most device time one borrower's stop may throw away in a reclaim, per device the claim asks for; 0: no bound (allot; default: the governor's; see docs/governor.md)"},
			&cli.Float64Flag{Name: "fair-share-gap", Usage: "override how far above the preemptor's tenant's weighted share a fair-share victim's tenant must stay (allot; default: the governor's, 0.1; see docs/governor.md)"},
			&cli.StringFlag{Name: "fair-share-classes", Usage: "override which classes a fair-share preemption may take: not-above or any (allot; default: the governor's, not-above; see docs/governor.md)"},
			&cli.StringFlag{Name: "fair-share-rule", Usage: "override the rule a fair-share preemption follows: auto, gap or entitlement (allot; default: the governor's, auto: entitlement for victims that save on stop or lose at most 5 minutes, gap for the others; see docs/governor.md)"},
			&cli.StringFlag{Name: "queue-order", Usage: "override how the queue orders jobs of different tenants: class or share (allot; default: the governor's, class; see docs/governor.md)"},
			&cli.DurationFlag{Name: "start-delay", Usage: "time from a job's last allocation placed until its tasks run (image pull, task start; all policies)"},
			&cli.DurationFlag{Name: "stop-delay", Usage: "time the allocations of a job allot requeues keep their GPUs (checkpoint and exit)"},
			&cli.BoolFlag{Name: "checkpoint-on-stop", Usage: "jobs save a checkpoint when stopped, as ckpt driver tasks do on request: a preemption loses no work (all policies; default: work since the last periodic checkpoint is lost)"},
			&cli.Float64Flag{Name: "ckpt-share", Usage: "share of the jobs (0–1, chosen by job ID) that run under the ckpt driver and save a checkpoint when stopped; the others lose work since their last periodic checkpoint (all policies; a trace's saves_on_stop jobs save either way)"},
			&cli.BoolFlag{Name: cmdutil.FlagJSON, Usage: "print JSON summaries instead of tables"}),
		Action: runAction,
	}
}

// durationUpTo reads duration flag name, refusing values outside [0, most]
// with a usage error.
func durationUpTo(c *cli.Context, name string, most time.Duration) (time.Duration, error) {
	d := c.Duration(name)
	if d < 0 || d > most {
		return 0, cmdutil.UsageError(c, "-%s must be between 0 and %v", name, most)
	}
	return d, nil
}

// engineFlags applies the flags that override the governor's engine
// settings (allot's policy) to opts, refusing values the governor's
// config would refuse.
func engineFlags(c *cli.Context, opts *gsim.Options) error {
	ec := &opts.Engine
	if c.IsSet("starvation-timeout") {
		ec.StarvationTimeout = c.Duration("starvation-timeout")
	}
	if c.IsSet("requeue-rest") {
		rest, err := durationUpTo(c, "requeue-rest", gsim.MaxRequeueRest)
		if err != nil {
			return err
		}
		ec.RequeueRest = rest
	}
	if c.IsSet("fair-min-run") {
		if ec.FairMinRun = c.Duration("fair-min-run"); ec.FairMinRun <= 0 {
			return cmdutil.UsageError(c, "-fair-min-run must be positive, got %s", ec.FairMinRun)
		}
	}
	if c.IsSet("reclaim-max-loss") {
		if ec.ReclaimMaxLoss = c.Duration("reclaim-max-loss"); ec.ReclaimMaxLoss < 0 {
			return cmdutil.UsageError(c, "-reclaim-max-loss must be 0 (no bound) or positive, got %s", ec.ReclaimMaxLoss)
		}
	}
	if c.IsSet("fair-share-gap") {
		if ec.FairShareGap = c.Float64("fair-share-gap"); !(ec.FairShareGap > 0 && ec.FairShareGap <= 1) {
			return cmdutil.UsageError(c, "-fair-share-gap must be above 0 and at most 1, got %g", ec.FairShareGap)
		}
	}
	for _, m := range []struct {
		flag  string
		dst   *string
		modes []string
	}{
		{"reclaim", &ec.Reclaim, []string{gsim.ReclaimAny, gsim.ReclaimCheckpointed}},
		{"fair-share-classes", &ec.FairClasses, []string{gsim.FairClassesNotAbove, gsim.FairClassesAny}},
		{"fair-share-rule", &ec.FairShareRule, []string{gsim.FairRuleAuto, gsim.FairRuleGap, gsim.FairRuleEntitlement}},
		{"queue-order", &ec.QueueOrder, []string{gsim.QueueOrderClass, gsim.QueueOrderShare}},
	} {
		if err := modeFlag(c, m.flag, m.dst, m.modes...); err != nil {
			return err
		}
	}
	ec.Reclaim = gsim.ReclaimWithBound(ec.Reclaim, c.IsSet("reclaim"), ec.ReclaimMaxLoss)
	if ec.ReclaimMaxLoss > 0 && ec.Reclaim == gsim.ReclaimCheckpointed {
		return cmdutil.UsageError(c, "-reclaim-max-loss bounds -reclaim %q only; %q already takes no borrower that loses more than 30 minutes of work",
			gsim.ReclaimAny, gsim.ReclaimCheckpointed)
	}
	return nil
}

// modeFlag sets *dst to string flag name when it is set to one of modes,
// refusing any other value with a usage error that names them.
func modeFlag(c *cli.Context, name string, dst *string, modes ...string) error {
	if !c.IsSet(name) {
		return nil
	}
	mode := c.String(name)
	for _, m := range modes {
		if mode == m {
			*dst = mode
			return nil
		}
	}
	quoted := make([]string, len(modes))
	for i, m := range modes {
		quoted[i] = strconv.Quote(m)
	}
	last := len(quoted) - 1
	if last > 0 {
		return cmdutil.UsageError(c, "-%s %q: must be %s or %s", name, mode, strings.Join(quoted[:last], ", "), quoted[last])
	}
	return cmdutil.UsageError(c, "-%s %q: must be %s", name, mode, quoted[0])
}

// engineSettingFlags maps the flags engineFlags applies to the governor
// settings they stand for, in the order the header lists them.
var engineSettingFlags = []struct{ flag, setting string }{
	{"starvation-timeout", "starvation_timeout"},
	{"requeue-rest", "requeue_rest"},
	{"fair-min-run", "fair_min_run"},
	{"reclaim", "reclaim"},
	{"reclaim-max-loss", "reclaim_max_loss"},
	{"fair-share-gap", "fair_share_gap"},
	{"fair-share-classes", "fair_share_classes"},
	{"fair-share-rule", "fair_share_rule"},
	{"queue-order", "queue_order"},
}

// overriddenSettings names the governor settings the command line
// overrides, as they would read in the governor's config file, so a table
// read later tells which governor produced it.
func overriddenSettings(c *cli.Context) []string {
	var out []string
	for _, f := range engineSettingFlags {
		if !c.IsSet(f.flag) {
			continue
		}
		v := c.Value(f.flag)
		if str, ok := v.(string); ok {
			v = strconv.Quote(str)
		} else if d, ok := v.(time.Duration); ok {
			v = strconv.Quote(d.String())
		}
		out = append(out, fmt.Sprintf("%s = %v", f.setting, v))
	}
	return out
}

func runAction(c *cli.Context) error {
	var policies []gsim.Policy
	for _, p := range strings.Split(c.String("policies"), ",") {
		pol, err := gsim.ParsePolicy(strings.TrimSpace(p))
		if err != nil {
			return cmdutil.UsageError(c, "-policies: %v", err)
		}
		policies = append(policies, pol)
	}
	sc, err := scenario(c)
	if err != nil {
		return err
	}
	opts := gsim.DefaultOptions()
	opts.Seed = c.Int64("seed")
	if opts.CycleInterval = c.Duration("cycle"); opts.CycleInterval <= 0 {
		return cmdutil.UsageError(c, "-cycle must be > 0")
	}
	if opts.StartDelay, err = durationUpTo(c, "start-delay", gsim.MaxDelay); err != nil {
		return err
	}
	if opts.StopDelay, err = durationUpTo(c, "stop-delay", gsim.MaxDelay); err != nil {
		return err
	}
	opts.CheckpointOnStop = c.Bool("checkpoint-on-stop")
	share := c.Float64("ckpt-share")
	if !(share >= 0 && share <= 1) {
		return cmdutil.UsageError(c, "-ckpt-share must be between 0 and 1, got %g", share)
	}
	workload.MarkSavesOnStop(sc.Jobs, share, opts.Seed)
	if err := engineFlags(c, &opts); err != nil {
		return err
	}
	var runs []report.Run
	for _, p := range policies {
		start := time.Now()
		r, err := gsim.Run(sc.Spec, sc.Jobs, p, opts)
		if err != nil {
			return err
		}
		runs = append(runs, report.Run{Result: r, Summary: gsim.Summarize(r), Wall: time.Since(start)})
	}
	if c.Bool(cmdutil.FlagJSON) {
		out := make([]gsim.Summary, 0, len(runs))
		for _, r := range runs {
			out = append(out, r.Summary)
		}
		return cmdutil.JSON(c.App.Writer, out)
	}
	fmt.Fprintf(c.App.Writer, "Cluster: %s (%d GPUs); %d jobs", sc.Spec, sc.Spec.GPUs(), len(sc.Jobs))
	if opts.CheckpointOnStop {
		fmt.Fprint(c.App.Writer, "; jobs save a checkpoint when stopped (-checkpoint-on-stop): preemption loses no work")
	} else if share > 0 {
		fmt.Fprintf(c.App.Writer, "; %.0f%% of jobs save a checkpoint when stopped (-ckpt-share)", share*100)
	}
	if set := overriddenSettings(c); len(set) > 0 {
		fmt.Fprintf(c.App.Writer, "; governor settings: %s", strings.Join(set, ", "))
	}
	fmt.Fprint(c.App.Writer, "\n\n")
	report.Tables(c.App.Writer, runs)
	for _, r := range runs {
		fmt.Fprintf(c.App.Writer, "%s: simulated %.0f h in %.2f s (%d governor cycles)\n", r.Summary.Policy, r.Result.End.Hours(), r.Wall.Seconds(), r.Result.Cycles)
	}
	return nil
}

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:  "generate",
		Usage: "write a generated workload as a JSON-lines trace",
		Flags: append(workloadFlags(), &cli.StringFlag{Name: "out", Usage: "output file (default: stdout)"}),
		Action: func(c *cli.Context) error {
			sc, err := scenario(c)
			if err != nil {
				return err
			}
			w := c.App.Writer
			if out := c.String("out"); out != "" {
				f, err := os.Create(out)
				if err != nil {
					return fmt.Errorf("writing trace: %w", err)
				}
				defer f.Close()
				w = f
			}
			return workload.WriteJSONL(w, sc.Jobs)
		},
	}
}

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "run the benchmark scenarios and write the Simulator section of a Markdown file",
		Flags: append(workloadFlags(),
			&cli.StringFlag{Name: "out", Value: "docs/benchmarks.md", Usage: "Markdown file whose \"## Simulator\" section is replaced"},
			&cli.StringFlag{Name: "plots", Value: "docs/img", Usage: "directory for the PNG charts"},
			&cli.StringFlag{Name: "plot-link", Value: "img", Usage: "how the Markdown file links the charts directory"},
			&cli.IntFlag{Name: "scale-nodes", Value: 1000, Usage: "nodes of the large simulation (0 skips it)"},
			&cli.IntFlag{Name: "scale-jobs", Value: 20000, Usage: "jobs of the large simulation"},
			&cli.DurationFlag{Name: "scale-cycle", Value: 30 * time.Second, Usage: "governor cycle interval of the large simulation"},
			&cli.StringFlag{Name: "engine-nodes", Value: "1000,5000,10000", Usage: "cluster sizes the engine cycle is timed at (empty skips)"},
			&cli.StringFlag{Name: "sweep-loads", Value: "0.9,1.2,1.5,2.0", Usage: "offered loads of the load sweep (empty skips)"}),
		Action: reportAction,
	}
}

func reportAction(c *cli.Context) error {
	cfg := report.Config{Cluster: c.String("cluster"), Seed: c.Int64("seed"), Jobs: c.Int("jobs"), Span: c.Duration("span"),
		Load: c.Float64("load"), ScaleNodes: c.Int("scale-nodes"), ScaleJobs: c.Int("scale-jobs"), ScaleCycle: c.Duration("scale-cycle"), ExtraSeeds: []int64{2, 3},
		PlotDir: c.String("plots"), PlotLink: c.String("plot-link"), Progress: c.App.ErrWriter,
		Command: commandLine(c)}
	for _, f := range strings.Split(c.String("engine-nodes"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(f, "%d", &n); err != nil || n < 1 {
			return cmdutil.UsageError(c, "-engine-nodes: %q is not a node count", f)
		}
		cfg.EngineNodes = append(cfg.EngineNodes, n)
	}
	for _, f := range strings.Split(c.String("sweep-loads"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var l float64
		if _, err := fmt.Sscanf(f, "%g", &l); err != nil || !(l > 0) {
			return cmdutil.UsageError(c, "-sweep-loads: %q is not a load > 0", f)
		}
		cfg.SweepLoads = append(cfg.SweepLoads, l)
	}
	body, err := report.Benchmarks(cfg)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(c.String("out"))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", c.String("out"), err)
	}
	return os.WriteFile(c.String("out"), report.ReplaceSection(doc, "Simulator", body), 0o644)
}

// commandLine renders the command with the flags set on it.
func commandLine(c *cli.Context) string {
	parts := []string{"allotctl sim", c.Command.Name}
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if c.IsSet(name) {
			parts = append(parts, fmt.Sprintf("-%s %v", name, c.Value(name)))
		}
	}
	return strings.Join(parts, " ")
}
