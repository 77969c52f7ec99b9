package testcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/allot-sh/allot/internal/repo"
)

// PluginPackages maps each project plugin binary to the package that builds
// it, relative to the repository root.
var PluginPackages = map[string]string{
	"nomad-device-accel": "./device-plugin",
	"nomad-driver-ckpt":  "./task-driver",
}

// driverPlugins are the project plugins that are task drivers; clients are
// ready only when these are detected and healthy.
var driverPlugins = map[string]string{"nomad-driver-ckpt": "ckpt"}

// driverNames lists the drivers every client must have healthy.
func (c *Cluster) driverNames() []string {
	names := []string{"raw_exec"}
	entries, _ := os.ReadDir(c.pluginD)
	for _, e := range entries {
		if d, ok := driverPlugins[e.Name()]; ok {
			names = append(names, d)
		}
	}
	return names
}

// RepoRoot returns the repository root the tests run in.
func RepoRoot() (string, error) { return repo.Root() }

// NomadBinary returns the Nomad agent to run: $NOMAD_BINARY when set, else
// bin/nomad in the repository (built by `make bin/nomad`).
func NomadBinary() (string, error) { return repoBinary("NOMAD_BINARY", "nomad", "make test") }

// repoBinary returns $env when set, else bin/<name> in the repository,
// which must exist; the error says to run `make bin/<name>` (or also).
func repoBinary(env, name, also string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is missing: run `make bin/%s` (or %s) first: %w", p, name, also, err)
	}
	return p, nil
}

// buildPlugins builds the named project plugins into dir with `go build`,
// so tests always load the code under test.
func buildPlugins(dir string, names []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating plugin dir: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		pkg, ok := PluginPackages[name]
		if !ok {
			return fmt.Errorf("unknown plugin %q (known: %v)", name, keys(PluginPackages))
		}
		if err := GoBuild(pkg, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// GoBuild builds the repository's package pkg (relative to the repository
// root, e.g. "./governor") into the binary out.
func GoBuild(pkg, out string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// BuildToyTrainer builds the ckpt driver's Go toy trainer into dir and
// returns its path; it fails the test when the build fails.
func BuildToyTrainer(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "toytrainer")
	if err := GoBuild("./task-driver/toytrainer", bin); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return bin
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
