//go:build !linux

package browser

import "os/exec"

// ownGroup leaves the command as chromedp would start it.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing off Linux.
func killGroup(int) {}

// groupAlive reports no process off Linux (nothing to wait for).
func groupAlive(int) bool { return false }
