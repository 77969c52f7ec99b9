// Package repo finds the Allot repository a program or test runs in.
package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound means no Allot checkout encloses the starting directory.
var ErrNotFound = errors.New("repository root (go.mod of github.com/allot-sh/allot) not found")

// Root returns the nearest directory at or above the working directory whose
// go.mod declares the Allot module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return RootFrom(dir)
}

// RootFrom is Root starting at dir.
func RootFrom(dir string) (string, error) {
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/allot-sh/allot\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}
