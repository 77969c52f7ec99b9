// Package browser drives a headless Chromium for Allot's browser tests: it
// finds Debian's chromium, starts it through chromedp with its own profile
// directory and no route off loopback, and offers the few page helpers the
// console tests need (navigate, collect console errors, read a table, fill
// and submit a form, screenshot, accessibility checks).
package browser

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// EnvChromium names the environment variable that overrides where the
// browser binary is.
const EnvChromium = "ALLOT_CHROMIUM"

// Candidates are the binaries Find tries, in order, when EnvChromium is not
// set: Debian's chromium first.
var Candidates = []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}

// InstallHint says how to get a browser; it ends every ErrNotFound.
const InstallHint = "install Debian's chromium (`apt-get update && apt-get install -y chromium`, as .ci/run does) " +
	"or set " + EnvChromium + " to a Chromium or Chrome binary"

// ErrNotFound is returned (wrapped, with InstallHint) when no browser binary
// can be found.
var ErrNotFound = errors.New("no Chromium browser found")

// Find returns the path of the browser binary: $ALLOT_CHROMIUM when set
// (it must exist), else the first of Candidates found.
func Find() (string, error) {
	return find(os.Getenv(EnvChromium), Candidates, exec.LookPath)
}

// find is Find with its environment injected, for tests.
func find(env string, candidates []string, look func(string) (string, error)) (string, error) {
	if env != "" {
		p, err := look(env)
		if err != nil {
			return "", fmt.Errorf("%w: %s=%q is not an executable (%v); %s", ErrNotFound, EnvChromium, env, err, InstallHint)
		}
		return p, nil
	}
	for _, c := range candidates {
		if p, err := look(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (tried %s); %s", ErrNotFound, strings.Join(candidates, ", "), InstallHint)
}
