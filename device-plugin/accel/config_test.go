package accel

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestBackendNames(t *testing.T) {
	tests := map[string]struct {
		backends   []string
		inventory  string
		want       []string
		wantDetect bool
	}{
		"detect without inventory tries hardware": {[]string{"detect"}, "", []string{"nvml", "ascend"}, true},
		"detect with inventory uses only it":      {[]string{"detect"}, "/x.hcl", []string{"inventory"}, true},
		"explicit list keeps order":               {[]string{"ascend", "nvml"}, "", []string{"ascend", "nvml"}, false},
		"duplicates collapse":                     {[]string{"nvml", "detect"}, "", []string{"nvml", "ascend"}, true},
		"inventory next to hardware":              {[]string{"inventory", "nvml"}, "/x.hcl", []string{"inventory", "nvml"}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Backends, cfg.InventoryFile = tc.backends, tc.inventory
			got, detect := backendNames(cfg)
			must.Eq(t, tc.want, got)
			must.Eq(t, tc.wantDetect, detect)
		})
	}
}

func TestDefaultConfigIsValidAndMatchesSpecDefaults(t *testing.T) {
	cfg := DefaultConfig()
	must.NoError(t, cfg.Validate())
	must.Eq(t, "10s", cfg.Period().String())
	must.Eq(t, []int{13, 31, 43, 45, 68, 109}, cfg.BenignXIDs)
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FingerprintPeriod, cfg.TopologyGrouping, cfg.Backends = "0s", "rack", []string{"inventory", "tpu"}
	err := cfg.Validate()
	for _, want := range []string{"fingerprint_period", "topology_grouping", "inventory_file", `unknown backend "tpu"`} {
		must.ErrorContains(t, err, want)
	}
}
