package ckpt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/helper/pluginutils/hclspecutils"
	"github.com/hashicorp/nomad/helper/pluginutils/hclutils"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/drivers"
	"github.com/shoenig/test/must"
)

// The fuzz targets of the driver's parsers. Seeds live in
// testdata/fuzz/<target>/; run one long with
//
//	go test -run '^$' -fuzz '^FuzzTaskConfig$' -fuzztime 10m -parallel 1 ./task-driver/ckpt/

// fuzzDefaults are plugin defaults a task config is validated against.
func fuzzDefaults(t *testing.T) settings {
	c := Config{}
	fillDefaults(&c)
	s, err := c.validate()
	must.NoError(t, err)
	return s
}

// checkTaskSettings asserts what a validated task config guarantees.
func checkTaskSettings(t *testing.T, tc TaskConfig, ts taskSettings) {
	must.NotEq(t, "", tc.Command)
	must.Positive(t, ts.timeout)
	name, sig, err := parseSignal(ts.signalName)
	must.NoError(t, err)
	must.Eq(t, ts.signal, sig)
	must.Eq(t, ts.signalName, name)
}

// FuzzTaskConfig feeds a task's config block, as the Nomad API carries it
// (JSON), through the client's path: the driver's hclspec (ParseHclInterface),
// msgpack, DecodeDriverConfig and validate. Bad input must be an error,
// never a panic, and a config that validates must be usable.
func FuzzTaskConfig(f *testing.F) {
	spec, diags := hclspecutils.Convert(taskConfigSpec)
	if diags.HasErrors() {
		f.Fatal(diags)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var raw map[string]interface{}
		if err := json.Unmarshal([]byte(data), &raw); err != nil {
			return
		}
		val, diags, errs := hclutils.ParseHclInterface(raw, spec, nil)
		if diags.HasErrors() || len(errs) > 0 {
			return
		}
		cfg := &drivers.TaskConfig{}
		if err := cfg.EncodeDriverConfig(val); err != nil {
			return
		}
		var tc TaskConfig
		if err := cfg.DecodeDriverConfig(&tc); err != nil {
			return
		}
		ts, err := tc.validate(fuzzDefaults(t))
		if err != nil {
			must.ErrorContains(t, err, "invalid ckpt task config")
			return
		}
		checkTaskSettings(t, tc, ts)
	})
}

// FuzzTaskConfigMsgpack decodes arbitrary bytes as the msgpack a task's
// config arrives in over the plugin boundary, then validates it.
func FuzzTaskConfigMsgpack(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var tc TaskConfig
		if err := base.MsgPackDecode(data, &tc); err != nil {
			return
		}
		ts, err := tc.validate(fuzzDefaults(t))
		if err != nil {
			return
		}
		checkTaskSettings(t, tc, ts)
	})
}

// FuzzParseLatest parses arbitrary LATEST contents: an error or a result
// whose path is absolute and whose step is -1 or non-negative.
func FuzzParseLatest(f *testing.F) {
	f.Fuzz(func(t *testing.T, data string) {
		l, err := parseLatest("/ck/ns/job/g/0/t", data)
		if err != nil {
			return
		}
		must.NotEq(t, "", l.Path)
		must.True(t, filepath.IsAbs(l.Path), must.Sprintf("path %q", l.Path))
		must.False(t, strings.ContainsAny(l.Path, "\n"), must.Sprintf("path %q", l.Path))
		must.True(t, l.Step >= -1)
		must.Eq(t, l.Step >= 0, l.HasStep())
	})
}

// FuzzReadLatest writes arbitrary contents as a task's LATEST and reads it
// back the way the driver does: the result agrees with parseLatest, and
// anything over the size bound is an error.
func FuzzReadLatest(f *testing.F) {
	dir := f.TempDir()
	p := filepath.Join(dir, LatestFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		must.NoError(t, os.WriteFile(p, data, 0o600))
		l, err := ReadLatest(dir, os.Geteuid())
		if len(data) > maxLatestSize {
			must.Error(t, err)
			return
		}
		want, perr := parseLatest(dir, string(data))
		if perr != nil {
			must.Error(t, err)
			return
		}
		must.NoError(t, err)
		must.Eq(t, want.Path, l.Path)
		must.Eq(t, want.Step, l.Step)
		must.False(t, l.ModTime.Before(time.Unix(0, 0)))
	})
}
