//go:build tools

// Package tools pins the Nomad agent that `make` builds into bin/nomad.
// It has its own module so the project's dependencies cannot change
// the versions Nomad v1.6.1 is built with.
package tools

import _ "github.com/hashicorp/nomad"
