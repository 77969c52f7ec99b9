// Command nomad-device-accel is Allot's Nomad device plugin for GPUs and
// NPUs. It only wires the backends into the plugin and serves it; see
// package accel and docs/device-plugin.md.
package main

import (
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/plugins"

	"github.com/allot-sh/allot/device-plugin/accel"
	"github.com/allot-sh/allot/device-plugin/backends"
)

func main() {
	plugins.Serve(func(logger hclog.Logger) interface{} {
		return accel.New(logger, backends.All(logger))
	})
}
