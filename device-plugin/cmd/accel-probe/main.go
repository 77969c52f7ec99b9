// Command accel-probe runs nomad-device-accel's backends once, outside
// Nomad, and prints what the plugin would report as JSON: devices, device
// groups with their attributes, a few rounds of stats, an example
// reservation and any backend errors. It is the one-shot check for a
// machine with real GPUs or NPUs (see docs/device-plugin.md).
//
//	accel-probe -backends nvml -stats 3 > probe.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/plugins/device"

	"github.com/allot-sh/allot/device-plugin/accel"
	"github.com/allot-sh/allot/device-plugin/backends"
)

// report is the probe's JSON output.
type report struct {
	Time              time.Time                    `json:"time"`
	Config            string                       `json:"config"`
	Devices           []accel.Device               `json:"devices"`
	Groups            []group                      `json:"groups"`
	Stats             [][]*device.DeviceGroupStats `json:"stats"`
	Reservation       *device.ContainerReservation `json:"reservation_of_first_group,omitempty"`
	Errors            map[string]string            `json:"errors,omitempty"`
	FingerprintMillis float64                      `json:"fingerprint_ms"`
}

type group struct {
	ID         string            `json:"id"`
	Attributes map[string]string `json:"attributes"`
	Instances  []*device.Device  `json:"instances"`
}

func main() {
	cfg := accel.DefaultConfig()
	list := flag.String("backends", "detect", "comma-separated backends: detect, nvml, ascend, inventory")
	flag.StringVar(&cfg.InventoryFile, "inventory", "", "inventory file (inventory backend)")
	flag.StringVar(&cfg.TopologyGrouping, "grouping", accel.GroupingNone, "topology grouping: none, island, numa")
	flag.StringVar(&cfg.NPUSmiPath, "npu-smi", "npu-smi", "npu-smi command")
	samples := flag.Int("stats", 2, "stats rounds to collect, one second apart")
	flag.Parse()
	cfg.Backends = strings.Split(*list, ",")
	if err := run(cfg, *samples, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "accel-probe:", err)
		os.Exit(1)
	}
}

func run(cfg *accel.Config, samples int, w io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "accel-probe", Output: os.Stderr, Level: hclog.Info})
	p := accel.New(logger, backends.All(logger))
	defer p.Close()
	if err := p.SetConfigDirect(cfg); err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	r := report{Time: start.UTC(), Config: cfg.String()}
	r.Devices = p.Devices(ctx)
	groups := accel.BuildGroups(r.Devices, cfg.TopologyGrouping)
	r.FingerprintMillis = float64(time.Since(start).Microseconds()) / 1000
	for _, g := range groups {
		out := group{ID: g.Vendor + "/" + g.Type + "/" + g.Name, Attributes: map[string]string{}, Instances: g.Devices}
		for k, v := range g.Attributes {
			out.Attributes[k] = v.GoString()
		}
		r.Groups = append(r.Groups, out)
	}
	for i := 0; i < samples; i++ {
		if i > 0 {
			time.Sleep(time.Second) // stats are rates over time: sample apart
		}
		s := p.CollectStats(ctx)
		if s.Error != nil {
			return fmt.Errorf("stats: %w", s.Error)
		}
		r.Stats = append(r.Stats, s.Groups)
	}
	if len(groups) > 0 && len(groups[0].Devices) > 0 {
		res, err := p.Reserve([]string{groups[0].Devices[0].ID})
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		r.Reservation = res
	}
	r.Errors = p.LastErrors()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("backends reported errors: %v", r.Errors)
	}
	return nil
}
