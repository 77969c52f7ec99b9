package config

import (
	"testing"
)

// TestFileErrorsNameTheSetting: a value of the wrong type is reported
// with the setting it was given for, in a block by its dotted name, so
// the operator need not count columns; syntax errors keep their
// position only.
func TestFileErrorsNameTheSetting(t *testing.T) {
	cases := map[string]struct {
		file    string
		wantErr string
	}{
		"top level":     {file: `fair_share_gap = "small"`, wantErr: `governor.hcl:1,19: fair_share_gap: Unsuitable value type; Unsuitable value: a number is required`},
		"a bool":        {file: "listen = \"127.0.0.1:4680\"\ndisable_preemption = \"yes\"", wantErr: `governor.hcl:2,23: disable_preemption: Unsuitable value type; Unsuitable value: a bool is required`},
		"in a block":    {file: "nomad {\n  tls_skip_verify = [1]\n}", wantErr: `governor.hcl:2,21: nomad.tls_skip_verify: Unsuitable value type`},
		"in a labelled": {file: "class \"gold\" {\n  priority = \"high\"\n}", wantErr: `governor.hcl:2,15: class.gold.priority: Unsuitable value type; Unsuitable value: a number is required`},
		"two at once, the first": {file: "reclaim = [1]\nfair_share_gap = {}",
			wantErr: "governor.hcl:1,11: reclaim: Unsuitable value type; Unsuitable value: string required\n"},
		"two at once, the second": {file: "reclaim = [1]\nfair_share_gap = {}",
			wantErr: "governor.hcl:2,18: fair_share_gap: Unsuitable value type; Unsuitable value: number required"},
		"syntax error": {file: "fair_share_gap = = 1", wantErr: `governor.hcl:1,18: Invalid expression`},
		"unknown name": {file: `fair_share = 0.1`, wantErr: `governor.hcl:1,1: Unsupported argument; An argument named "fair_share" is not expected here.`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			loadFile(t, tc.file, tc.wantErr)
		})
	}
}
