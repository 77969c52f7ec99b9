package config

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestSystemJobs(t *testing.T) {
	cases := map[string]struct {
		file    string
		want    string
		wantErr string
	}{
		"refused by default":  {file: ``, want: SystemJobsRefuse},
		"governed on request": {file: `system_jobs = "govern"`, want: SystemJobsGovern},
		"anything else is an error": {file: `system_jobs = "allow"`,
			wantErr: `system_jobs "allow": must be "refuse" or "govern"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := loadFile(t, tc.file, tc.wantErr)
			if c == nil {
				return
			}
			must.Eq(t, tc.want, c.SystemJobs)
		})
	}
}
