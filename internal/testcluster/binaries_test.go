package testcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

// TestRepoBinary: the variable wins; otherwise bin/<name> in the checkout,
// and a missing one says how to build it.
func TestRepoBinary(t *testing.T) {
	t.Setenv("ALLOT_TEST_BINARY", "/opt/x/consul")
	p, err := repoBinary("ALLOT_TEST_BINARY", "no-such-binary", "make build")
	must.NoError(t, err)
	must.Eq(t, "/opt/x/consul", p)

	t.Setenv("ALLOT_TEST_BINARY", "")
	root, err := RepoRoot()
	must.NoError(t, err)
	_, err = repoBinary("ALLOT_TEST_BINARY", "no-such-binary", "make build")
	must.ErrorIs(t, err, os.ErrNotExist)
	must.StrHasPrefix(t, filepath.Join(root, "bin", "no-such-binary")+" is missing: run `make bin/no-such-binary` (or make build) first: ", err.Error())

	if _, err := os.Stat(filepath.Join(root, "bin", "nomad")); err == nil {
		p, err = repoBinary("ALLOT_TEST_BINARY", "nomad", "make test")
		must.NoError(t, err)
		must.Eq(t, filepath.Join(root, "bin", "nomad"), p)
	}
}
