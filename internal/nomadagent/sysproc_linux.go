package nomadagent

import "syscall"

// sysProcAttr puts the agent in its own process group (a terminal's Ctrl-C
// reaches only the supervisor, which then stops agents in order) and kills
// it if the supervising process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
