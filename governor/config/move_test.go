package config

import (
	"io"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestMoveMinRun: move_min_run reaches the engine (10m by default, as
// engine.MoveMinRun) and must be a positive duration.
func TestMoveMinRun(t *testing.T) {
	cases := map[string]struct {
		file    string
		want    time.Duration
		wantErr string
	}{
		"10 minutes by default":   {file: ``, want: 10 * time.Minute},
		"seconds":                 {file: `move_min_run = "5s"`, want: 5 * time.Second},
		"hours":                   {file: `move_min_run = "2h"`, want: 2 * time.Hour},
		"zero is refused":         {file: `move_min_run = "0s"`, wantErr: "move_min_run must be positive, got 0s"},
		"negative is refused":     {file: `move_min_run = "-1m"`, wantErr: "move_min_run must be positive, got -1m0s"},
		"not a duration":          {file: `move_min_run = "soon"`, wantErr: `move_min_run: time: invalid duration "soon"`},
		"a number is no duration": {file: `move_min_run = 600`, wantErr: `move_min_run: time: missing unit in duration "600"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Load([]string{"-config", writeFile(t, tc.file)}, noEnv, io.Discard)
			if tc.wantErr != "" {
				must.ErrorContains(t, err, tc.wantErr)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, c.MoveMinRun)
			must.Eq(t, tc.want, c.Engine().MoveMinRun, must.Sprint("the engine decides with it"))
		})
	}
}
