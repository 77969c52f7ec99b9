package config

import "testing"

func TestSystemJobs(t *testing.T) {
	checkSetting(t, map[string]settingCase[string]{
		"refused by default":  {file: ``, want: SystemJobsRefuse},
		"governed on request": {file: `system_jobs = "govern"`, want: SystemJobsGovern},
		"anything else is an error": {file: `system_jobs = "allow"`,
			wantErr: `system_jobs "allow": must be "refuse" or "govern"`},
	}, func(c Config) string { return c.SystemJobs }, nil)
}
