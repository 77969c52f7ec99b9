//go:build tools

// Package tools pins staticcheck for `make check`; the Makefile builds it into
// bin/staticcheck from this module so its dependencies never touch the
// project's go.mod.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
