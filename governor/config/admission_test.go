package config

import (
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

func TestAdmissionKeySettings(t *testing.T) {
	key := writeFile(t, "c2VjcmV0")
	cases := map[string]struct {
		file string
		want Admission
		err  string
	}{
		"defaults": {file: ``, want: Admission{}},
		"key file and namespace": {
			file: `admission_key_file = "` + key + `"
admission_key_namespace = "allot-system"`,
			want: Admission{KeyFile: key, KeyNamespace: "allot-system"},
		},
		"missing key file": {
			file: `admission_key_file = "` + filepath.Join(t.TempDir(), "none") + `"`,
			err:  "admission_key_file:",
		},
		"bad namespace": {file: `admission_key_namespace = "a/b"`, err: "admission_key_namespace:"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := Default()
			err := c.LoadFile(writeFile(t, tc.file))
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, c.Admission)
		})
	}
}
