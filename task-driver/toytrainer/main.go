// Command toytrainer is a stand-in for a training job that speaks the ckpt
// driver's protocol, for the e2e tests and benchmarks: it counts steps,
// resumes from $ALLOT_RESUME_FROM, checkpoints every -save-every steps and
// on $ALLOT_CHECKPOINT_SIGNAL, and replaces LATEST atomically.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/allot-sh/allot/task-driver/toytrainer/trainer"
)

func main() {
	var o trainer.Options
	flag.Int64Var(&o.Steps, "steps", 0, "stop after this many steps in total (0: run until stopped)")
	flag.DurationVar(&o.StepTime, "step-time", 0, "time one step takes")
	flag.Int64Var(&o.SaveEvery, "save-every", 0, "checkpoint every this many steps (0: only on the signal)")
	flag.BoolVar(&o.IgnoreSignals, "ignore-signals", false, "ignore the checkpoint signal, SIGINT and SIGTERM")
	flag.BoolVar(&o.KeepRunning, "keep-running", false, "after a requested checkpoint, keep training until killed")
	flag.Int64Var(&o.ProgressEvery, "progress-every", 0, "print the step every this many steps (0: never)")
	flag.Parse()
	if err := trainer.Run(o, trainer.EnvFromOS(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "toytrainer:", err)
		os.Exit(1)
	}
}
