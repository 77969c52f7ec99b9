//go:build !linux

package nomadagent

import "syscall"

// sysProcAttr puts the agent in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
