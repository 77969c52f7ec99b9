//go:build linux && cgo

package nvml

import (
	"context"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// BenchmarkFingerprint measures the backend's own work per fingerprint
// (enumeration, 18 NVLink probes per GPU, topology, events) against the
// go-nvml mock; a real NVML adds its driver-call latency on top.
func BenchmarkFingerprint(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("nvml-mock/%d-devices", n), func(b *testing.B) {
			box := newBox(dgxh200.NewWithGPUs(gpus.Multiple(n, gpus.H200_SXM5_141GB)...))
			box.nvswitch(18)
			box.numa(func(i int) int { return 2 * i / n })
			be, err := New(box.srv, accel.DefaultBenignXIDs, hclog.NewNullLogger())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := be.Fingerprint(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStats measures one stats collection of 8 GPUs on the mock.
func BenchmarkStats(b *testing.B) {
	box := h200Box()
	be, err := New(box.srv, accel.DefaultBenignXIDs, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	devs, _ := be.Fingerprint(ctx)
	b.Run("nvml-mock/8-devices", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := be.Stats(ctx, devs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
