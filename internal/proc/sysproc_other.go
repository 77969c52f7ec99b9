//go:build !linux

package proc

import "syscall"

// sysProcAttr puts the process in its own group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
