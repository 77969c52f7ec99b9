package sim

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestShareErrorParts: idle GPUs alone set a floor under the share
// error; the allocated GPUs are judged against their own fair division.
func TestShareErrorParts(t *testing.T) {
	sample := func(tenant ...int) Sample { return Sample{Tenant: tenant, Demand: []int{100, 100}} }
	cases := map[string]struct {
		samples                    []Sample
		share, idle, amongAllotted float64
	}{
		"every GPU allocated, fairly": {samples: []Sample{sample(50, 50)}},
		"a fifth idle, the rest split fairly": {samples: []Sample{sample(40, 40)},
			share: 0.2, idle: 0.2},
		"every GPU allocated, unfairly": {samples: []Sample{sample(80, 20)},
			share: 0.6, amongAllotted: 0.6},
		"a fifth idle and unfair": {samples: []Sample{sample(60, 20)},
			share: 0.4, idle: 0.2, amongAllotted: 0.5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.samples = append(tc.samples, tc.samples[0]) // two samples a minute apart
			for i := range tc.samples {
				tc.samples[i].T = time.Duration(i) * time.Minute
			}
			r := &Result{GPUs: 100, Tenants: []string{"a", "b"}, Entitled: []int{50, 50}, Samples: tc.samples,
				Jobs: []JobResult{{Tenant: "a", Submit: time.Hour, Start: -1, End: -1}}}
			s := Summarize(r)
			must.Between(t, tc.share-1e-9, s.ShareError, tc.share+1e-9)
			must.Between(t, tc.idle-1e-9, s.ShareErrorIdle, tc.idle+1e-9)
			must.Between(t, tc.amongAllotted-1e-9, s.ShareErrorAllocated, tc.amongAllotted+1e-9)
			var ent, entAlloc float64
			for _, sh := range s.Shares {
				ent += sh.Entitled
				entAlloc += sh.EntitledAllocated
			}
			must.Between(t, 200*(1-tc.idle)/60-1e-9, entAlloc, 200*(1-tc.idle)/60+1e-9, must.Sprint("the allocated GPU-hours"))
			must.Between(t, 200.0/60-1e-9, ent, 200.0/60+1e-9)
		})
	}
}

// TestNetUseful: the GPU time of work preemptions threw away within the
// span comes off the useful allocation; losses after the span do not.
func TestNetUseful(t *testing.T) {
	cases := map[string]struct {
		losses []Loss
		net    float64
	}{
		"nothing lost":                        {net: 0.8},
		"a tenth of the span's GPU time lost": {losses: []Loss{{T: 10 * time.Minute, GPUSeconds: 100 * 360}}, net: 0.7},
		"two losses add":                      {losses: []Loss{{T: time.Minute, GPUSeconds: 100 * 180}, {T: time.Hour, GPUSeconds: 100 * 180}}, net: 0.7},
		"a loss after the span":               {losses: []Loss{{T: 2 * time.Hour, GPUSeconds: 100 * 360}}, net: 0.8},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Result{GPUs: 100, Tenants: []string{"a"}, Entitled: []int{100}, Losses: tc.losses,
				Samples: []Sample{{T: 0, Useful: 80, Allocated: 80, Tenant: []int{80}, Demand: []int{100}},
					{T: time.Hour, Useful: 80, Allocated: 80, Tenant: []int{80}, Demand: []int{100}}},
				Jobs: []JobResult{{Tenant: "a", Submit: time.Hour, Start: -1, End: -1}}}
			s := Summarize(r)
			must.Between(t, 0.8-1e-9, s.UsefulRate, 0.8+1e-9)
			must.Between(t, tc.net-1e-9, s.NetUsefulRate, tc.net+1e-9)
		})
	}
}
