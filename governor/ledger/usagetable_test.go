package ledger

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestUsageTable: the columns and number formats allotctl report usage
// prints and the console's usage view and CSV show.
func TestUsageTable(t *testing.T) {
	rows := []Usage{
		{Key: map[string]string{"tenant": "ml", "job": "train", "model": "nvidia/gpu/H200"}, Allocations: 3, DeviceMS: 7_200_000,
			UsedDeviceMS: 3_600_000, UsedSampledMS: 7_200_000, RunMS: 3_600_500, WaitMS: 1234, Failures: 1, Preemptions: 2, Restarts: 3, LostWorkMS: 99},
		{Key: map[string]string{"job": "x"}, DeviceMS: 1},
	}
	numbers := []string{"Allocs", "Device-h", "Used device-h", "Run h", "Wait h", "Failed", "Preempted", "Restarts", "Lost work h"}
	cases := map[string]struct {
		by         []string
		wantHeader []string
		wantRows   [][]string
	}{
		"tenant": {by: []string{"tenant"}, wantHeader: append([]string{"Tenant"}, numbers...),
			wantRows: [][]string{{"ml", "3", "2.000", "1.000", "1.000", "0.000", "1", "2", "3", "0.000"},
				{"-", "0", "0.000", "-", "0.000", "0.000", "0", "0", "0", "0.000"}}},
		"job gets its tenant": {by: []string{"job"}, wantHeader: append([]string{"Tenant", "Job"}, numbers...),
			wantRows: [][]string{{"ml", "train", "3", "2.000", "1.000", "1.000", "0.000", "1", "2", "3", "0.000"},
				{"-", "x", "0", "0.000", "-", "0.000", "0.000", "0", "0", "0", "0.000"}}},
		"tenant and job": {by: []string{"tenant", "job"}, wantHeader: append([]string{"Tenant", "Job"}, numbers...),
			wantRows: [][]string{{"ml", "train", "3", "2.000", "1.000", "1.000", "0.000", "1", "2", "3", "0.000"},
				{"-", "x", "0", "0.000", "-", "0.000", "0.000", "0", "0", "0", "0.000"}}},
		"pool and model": {by: []string{"pool", "model"}, wantHeader: append([]string{"Pool", "Model"}, numbers...),
			wantRows: [][]string{{"-", "nvidia/gpu/H200", "3", "2.000", "1.000", "1.000", "0.000", "1", "2", "3", "0.000"},
				{"-", "-", "0", "0.000", "-", "0.000", "0.000", "0", "0", "0", "0.000"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, r := UsageTable(UsageAnswer{By: tc.by, Rows: rows})
			must.Eq(t, tc.wantHeader, h)
			must.Eq(t, tc.wantRows, r)
		})
	}
	must.Eq(t, []string{"tenant", "job", "class"}, UsageKeyColumns([]string{"job", "class"}))
	must.Eq(t, []string{"job", "tenant"}, UsageKeyColumns([]string{"job", "tenant"}))
}
