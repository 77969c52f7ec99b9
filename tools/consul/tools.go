//go:build tools

// Package tools pins the Consul agent that `make` builds into bin/consul.
// It has its own module so the project's dependencies cannot change the
// versions Consul v1.15.4 (the last MPL-2.0 release) is built with.
package tools

import _ "github.com/hashicorp/consul"
