package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Load lists the module's packages in dir with `go list` for the given build
// tags and returns them with their module imports (non-test files only).
func Load(dir, tags string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Error", "-tags", tags, "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list (tags %q): %w: %s", tags, err, stderr.String())
	}
	return decode(bytes.NewReader(out))
}

// decode reads go list's stream of JSON objects.
func decode(r io.Reader) ([]Package, error) {
	var pkgs []Package
	dec := json.NewDecoder(r)
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, Package{Path: relative(p.ImportPath), Imports: moduleImports(p.Imports)})
	}
}

// moduleImports keeps the imports inside Module, relative to it.
func moduleImports(imports []string) []string {
	var out []string
	for _, imp := range imports {
		if imp == Module || strings.HasPrefix(imp, Module+"/") {
			out = append(out, relative(imp))
		}
	}
	return out
}

func relative(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, Module), "/")
}
