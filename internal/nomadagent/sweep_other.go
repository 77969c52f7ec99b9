//go:build !linux

package nomadagent

// Sweep is a no-op where /proc does not exist; agents are only stopped.
func Sweep(dir string, cgroupParents ...string) ([]int, error) { return nil, nil }
