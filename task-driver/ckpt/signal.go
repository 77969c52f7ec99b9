package ckpt

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrBadSignal is returned for a signal name that is unknown or that a task
// cannot handle.
var ErrBadSignal = errors.New("invalid signal")

// parseSignal turns "SIGUSR1" or "USR1" into the canonical name and number.
// SIGKILL and SIGSTOP are refused: a task cannot catch them, so it could
// never checkpoint on them.
func parseSignal(name string) (string, syscall.Signal, error) {
	canon := strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(canon, "SIG") {
		canon = "SIG" + canon
	}
	sig := unix.SignalNum(canon)
	if sig == 0 {
		return "", 0, fmt.Errorf("%w %q: not a signal name such as SIGUSR1", ErrBadSignal, name)
	}
	if sig == unix.SIGKILL || sig == unix.SIGSTOP {
		return "", 0, fmt.Errorf("%w %q: a task cannot catch it, so it cannot checkpoint on it", ErrBadSignal, name)
	}
	return canon, sig, nil
}

// killSignal parses the task's kill_signal as Nomad passes it to StopTask;
// empty means SIGINT, Nomad's default for exec-family drivers.
func killSignal(name string) (syscall.Signal, error) {
	if name == "" {
		return syscall.SIGINT, nil
	}
	canon := strings.ToUpper(name)
	if !strings.HasPrefix(canon, "SIG") {
		canon = "SIG" + canon
	}
	sig := unix.SignalNum(canon)
	if sig == 0 {
		return 0, fmt.Errorf("%w %q", ErrBadSignal, name)
	}
	return sig, nil
}
