package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/shoenig/test/must"
)

// FuzzLoadFile feeds arbitrary files to the governor's config loader.
// Seeds: testdata/fuzz/FuzzLoadFile (the documented example, the test
// files, broken syntax). Properties: loading and validating never panic;
// every error names the file, and every syntax or schema error its line;
// loading is deterministic; and Load (defaults → file → flags → Validate)
// accepts the file exactly when LoadFile, the resolution of derived
// defaults and Validate do, with the same result.
func FuzzLoadFile(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "governor.hcl")
		must.NoError(t, os.WriteFile(path, src, 0o600))

		c := Default()
		err := c.LoadFile(path)
		again := Default()
		errAgain := again.LoadFile(path)
		must.Eq(t, errText(err), errText(errAgain))
		must.Eq(t, c, again)
		if err != nil {
			checkLoadError(t, path, err)
		} else {
			// What Load resolves from the file's settings before it
			// validates: the ledger's path, HA's member id and advertise URL.
			c.resolveLedger()
			c.resolveHA(osHostname)
			err = c.Validate()
		}

		loaded, loadErr := Load([]string{"-config", path}, noEnv, io.Discard)
		if err != nil {
			must.Error(t, loadErr)
			return
		}
		must.NoError(t, loadErr)
		must.Eq(t, c, loaded)
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkLoadError checks that an error of LoadFile names the file, and
// that HCL's diagnostics carry the file and a line.
func checkLoadError(t *testing.T, path string, err error) {
	t.Helper()
	must.StrContains(t, err.Error(), path)
	var diags hcl.Diagnostics
	if !errors.As(err, &diags) {
		return
	}
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		must.NotNil(t, d.Subject, must.Sprintf("diagnostic without a position: %s", d.Summary))
		must.Eq(t, path, d.Subject.Filename)
		must.Positive(t, d.Subject.Start.Line)
	}
}

// TestFileErrorsAreCompleteAndStable checks what FuzzLoadFile found: with
// two problems, HCL's error named only one of them, and which one depended
// on map order. Every problem is now listed, in file order.
func TestFileErrorsAreCompleteAndStable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "governor.hcl")
	must.NoError(t, os.WriteFile(path, []byte("X=\"\"\nx={70=A01}\n"), 0o600))
	c := Default()
	first := c.LoadFile(path)
	must.Error(t, first)
	for i := 0; i < 20; i++ {
		c := Default()
		must.Eq(t, first.Error(), c.LoadFile(path).Error())
	}
	msg := first.Error()
	must.StrContains(t, msg, path+`:1,1: Unsupported argument; An argument named "X"`)
	must.StrContains(t, msg, path+`:2,1: Unsupported argument; An argument named "x"`)
	var diags hcl.Diagnostics
	must.True(t, errors.As(first, &diags))
	must.Len(t, 2, diags)
}
