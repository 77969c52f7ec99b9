package proc

import "syscall"

// sysProcAttr puts the process in its own group (a terminal's Ctrl-C reaches
// only the supervisor) and kills it if the supervisor dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
