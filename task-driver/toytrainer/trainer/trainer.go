// Package trainer is the toy training loop behind cmd toytrainer: a step
// counter that checkpoints the way the ckpt driver expects.
package trainer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options shape the toy training run.
type Options struct {
	// Steps ends the run after this many steps in total (0: never).
	Steps int64
	// StepTime is how long one step takes.
	StepTime time.Duration
	// SaveEvery checkpoints every this many steps (0: only on request).
	SaveEvery int64
	// IgnoreSignals ignores the checkpoint signal, SIGINT and SIGTERM.
	IgnoreSignals bool
	// KeepRunning keeps training after a requested checkpoint.
	KeepRunning bool
	// ProgressEvery prints the step every this many steps (0: never).
	ProgressEvery int64
}

// Env is what the driver passes in the task environment.
type Env struct {
	Dir, Signal, ResumeFrom string
}

// EnvFromOS reads Env from the process environment.
func EnvFromOS() Env {
	return Env{
		Dir:        os.Getenv("ALLOT_CHECKPOINT_DIR"),
		Signal:     os.Getenv("ALLOT_CHECKPOINT_SIGNAL"),
		ResumeFrom: os.Getenv("ALLOT_RESUME_FROM"),
	}
}

// Run trains until Steps are done, a requested checkpoint is written, or a
// termination signal arrives.
func Run(o Options, env Env, out io.Writer) error {
	if env.Dir == "" {
		return errors.New("ALLOT_CHECKPOINT_DIR is not set")
	}
	step, err := resume(env.ResumeFrom)
	if err != nil {
		return err
	}
	// The start line comes once the signals are subscribed: a stop that
	// follows it finds the trainer ready to checkpoint (a checkpoint
	// signal before signal.Notify is dropped by the Go runtime).
	ckptSig, stopSigs := signals(o, env)
	fmt.Fprintf(out, "toytrainer: starting at step %d\n", step)
	if o.StepTime <= 0 {
		o.StepTime = time.Millisecond
	}
	tick := time.NewTicker(o.StepTime)
	defer tick.Stop()
	for o.Steps == 0 || step < o.Steps {
		select {
		case <-ckptSig:
			if err := Save(env.Dir, step); err != nil {
				return err
			}
			fmt.Fprintf(out, "toytrainer: checkpointed step %d on request\n", step)
			if !o.KeepRunning {
				return nil
			}
		case s := <-stopSigs:
			fmt.Fprintf(out, "toytrainer: stopping on %v at step %d\n", s, step)
			return nil
		case <-tick.C:
			step++
			if o.ProgressEvery > 0 && step%o.ProgressEvery == 0 {
				fmt.Fprintf(out, "toytrainer: step %d\n", step)
			}
			if o.SaveEvery > 0 && step%o.SaveEvery == 0 {
				if err := Save(env.Dir, step); err != nil {
					return err
				}
				fmt.Fprintf(out, "toytrainer: checkpointed step %d\n", step)
			}
		}
	}
	fmt.Fprintf(out, "toytrainer: done at step %d\n", step)
	return nil
}

// signals subscribes to the checkpoint signal and the stop signals, or
// ignores them all.
func signals(o Options, env Env) (<-chan os.Signal, <-chan os.Signal) {
	ckpt, stop := make(chan os.Signal, 1), make(chan os.Signal, 1)
	sig := unix.SignalNum(env.Signal)
	if sig == 0 {
		sig = syscall.SIGUSR1
	}
	if o.IgnoreSignals {
		signal.Ignore(sig, syscall.SIGINT, syscall.SIGTERM)
		return ckpt, stop
	}
	signal.Notify(ckpt, sig)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	return ckpt, stop
}

// resume reads the step stored in the checkpoint at path ("" = none).
func resume(path string) (int64, error) {
	if path == "" {
		return 0, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading checkpoint %s: %w", path, err)
	}
	step, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing checkpoint %s: %w", path, err)
	}
	return step, nil
}

// Save writes the checkpoint of step, then atomically replaces LATEST.
func Save(dir string, step int64) error {
	name := filepath.Join(dir, fmt.Sprintf("step-%08d.ckpt", step))
	if err := writeAtomic(name, strconv.FormatInt(step, 10)+"\n"); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "LATEST"), fmt.Sprintf("%s\n%d\n", name, step))
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
