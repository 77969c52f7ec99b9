// Command nomad-driver-ckpt is the Nomad task driver "ckpt". Nomad's client
// starts it as a plugin; the driver in turn starts this same binary with the
// argument "executor" for every task, which the executor package's init
// function serves before main runs (see ckpt/README.md).
package main

import (
	"github.com/hashicorp/nomad/plugins"

	"github.com/allot-sh/allot/task-driver/ckpt"
)

func main() {
	plugins.ServeCtx(ckpt.NewPlugin)
}
