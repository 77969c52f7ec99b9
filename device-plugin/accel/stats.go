package accel

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/nomad/plugins/device"
	"github.com/hashicorp/nomad/plugins/shared/structs"
)

// Stats streams every device's statistics, collected each interval.
func (p *Plugin) Stats(ctx context.Context, interval time.Duration) (<-chan *device.StatsResponse, error) {
	if _, err := p.config(); err != nil {
		return nil, err
	}
	if interval <= 0 {
		interval = time.Second
	}
	out := make(chan *device.StatsResponse)
	go p.statsLoop(ctx, interval, out)
	return out, nil
}

func (p *Plugin) statsLoop(ctx context.Context, interval time.Duration, out chan<- *device.StatsResponse) {
	defer close(out)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		resp := p.CollectStats(ctx)
		select {
		case out <- resp:
		case <-ctx.Done():
			return
		}
		timer.Reset(interval)
	}
}

// CollectStats collects one round of statistics from every backend, for the
// devices of the latest fingerprint. A backend whose stats fail is left out
// (and logged); the response is an error only when every backend failed.
func (p *Plugin) CollectStats(ctx context.Context) *device.StatsResponse {
	p.roundMu.Lock()
	defer p.roundMu.Unlock()
	p.mu.Lock()
	if p.cfg == nil {
		p.mu.Unlock()
		return device.NewStatsError(errors.New("nomad-device-accel: SetConfig was not called"))
	}
	grouping := p.cfg.TopologyGrouping
	type job struct {
		b    Backend
		devs []Device
	}
	var jobs []job
	for _, b := range p.backends {
		if mine := p.backendDevicesLocked(b.Name()); len(mine) > 0 {
			jobs = append(jobs, job{b, mine})
		}
	}
	p.mu.Unlock()

	var devs []Device
	stats := map[string]Stats{}
	var errs []error
	for _, j := range jobs {
		got, err := j.b.Stats(ctx, j.devs)
		if err != nil {
			p.logger.Warn("collecting stats", "backend", j.b.Name(), "error", err)
			errs = append(errs, err)
			continue
		}
		for id, s := range got {
			stats[id] = s
		}
		devs = append(devs, j.devs...)
	}
	if len(devs) == 0 && len(errs) > 0 {
		return device.NewStatsError(errors.Join(errs...))
	}
	return &device.StatsResponse{Groups: groupStats(devs, stats, grouping)}
}

// backendDevicesLocked lists the current schedulable devices that came from
// one backend's last good fingerprint.
func (p *Plugin) backendDevicesLocked(name string) []Device {
	var out []Device
	for _, d := range p.lastGood[name] {
		if _, ok := p.devices[d.ID]; ok && schedulable(d) {
			out = append(out, d)
		}
	}
	return out
}

// groupStats arranges per-device stats by the groups BuildGroups makes.
func groupStats(devs []Device, stats map[string]Stats, grouping string) []*device.DeviceGroupStats {
	ids, byGroup := partition(devs, grouping)
	var groups []*device.DeviceGroupStats
	for _, id := range ids {
		g := &device.DeviceGroupStats{Vendor: id.vendor, Type: id.typ, Name: id.name, InstanceStats: map[string]*device.DeviceStats{}}
		for _, d := range byGroup[id] {
			if s, ok := stats[d.ID]; ok {
				g.InstanceStats[d.ID] = deviceStats(s)
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// Stat names, as nomad-device-nvidia spells the ones it also has.
const (
	StatUtilization = "GPU utilization"
	StatMemoryUsed  = "Memory utilization"
	StatPower       = "Power usage"
	StatTemperature = "Temperature"
	StatECCErrors   = "ECC errors"
	StatProcesses   = "Processes"
)

func deviceStats(s Stats) *device.DeviceStats {
	memUsed := &structs.StatValue{
		IntNumeratorVal: ptr(s.MemoryUsedMiB), Unit: structs.UnitMiB, Desc: "memory used",
	}
	if s.MemoryTotalMiB > 0 {
		memUsed.IntDenominatorVal = ptr(s.MemoryTotalMiB)
	}
	attrs := map[string]*structs.StatValue{
		StatUtilization: {FloatNumeratorVal: ptr(s.UtilizationPct), Unit: "%", Desc: "compute utilization"},
		StatMemoryUsed:  memUsed,
		StatPower:       {FloatNumeratorVal: ptr(s.PowerW), Unit: structs.UnitW, Desc: "power draw"},
		StatTemperature: {FloatNumeratorVal: ptr(s.TemperatureC), Unit: "C", Desc: "temperature"},
		StatECCErrors:   {IntNumeratorVal: ptr(s.ECCErrors), Desc: "uncorrected ECC errors (volatile)"},
	}
	if s.Processes != nil {
		attrs[StatProcesses] = &structs.StatValue{IntNumeratorVal: ptr(*s.Processes), Desc: "processes on the device"}
	}
	return &device.DeviceStats{Summary: memUsed, Stats: &structs.StatObject{Attributes: attrs}, Timestamp: s.Timestamp}
}

func ptr[T any](v T) *T { return &v }
