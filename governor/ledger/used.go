package ledger

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// StatUtilization is the device statistic the used basis reads, as
// nomad-device-nvidia and Allot's device plugin name it (percent).
const StatUtilization = "GPU utilization"

// MaxStatsPerTick bounds the allocations whose device stats one accrual
// reads (one client request each); the others are read on later ticks.
const MaxStatsPerTick = 200

// DeviceStats reads an allocation's device utilization (0..1, averaged over
// its devices) per model; a model without the statistic is absent.
type DeviceStats interface {
	DeviceUtilization(ctx context.Context, allocID string) (map[string]float64, error)
}

// DeviceUtilization implements DeviceStats through the allocation stats
// API (Nomad forwards it to the allocation's client).
func (n *NomadAPI) DeviceUtilization(ctx context.Context, allocID string) (map[string]float64, error) {
	st, err := n.Client.Allocations().Stats(&api.Allocation{ID: allocID}, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading stats of allocation %s: %w", allocID, err)
	}
	if st == nil || st.ResourceUsage == nil {
		return nil, nil
	}
	return utilization(st.ResourceUsage.DeviceStats), nil
}

func utilization(groups []*api.DeviceGroupStats) map[string]float64 {
	out := map[string]float64{}
	for _, g := range groups {
		if g == nil {
			continue
		}
		var sum float64
		var n int
		for _, inst := range g.InstanceStats {
			if inst == nil || inst.Stats == nil {
				continue
			}
			if v := inst.Stats.Attributes[StatUtilization]; v != nil && v.FloatNumeratorVal != nil {
				sum += *v.FloatNumeratorVal / 100
				n++
			}
		}
		if n > 0 {
			out[g.Vendor+"/"+g.Type+"/"+g.Name] = sum / float64(n)
		}
	}
	return out
}

// usedSampler adds utilization × Δt to open segments. Δt is the time since
// the allocation's previous sample (at most one accrual period, also for
// the first sample after a restart).
type usedSampler struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (u *usedSampler) sample(ctx context.Context, db *DB, stats DeviceStats, now time.Time, period time.Duration) error {
	open, err := db.openDeviceSegments(ctx)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil {
		u.last = map[string]time.Time{}
	}
	seen := map[string]bool{}
	for i, s := range open {
		if i >= MaxStatsPerTick {
			break
		}
		seen[s.AllocID] = true
		// Δt runs from the previous sample (or the start), at most one
		// period: a restart does not count the time it was down.
		from := s.Start
		if prev, ok := u.last[s.AllocID]; ok && prev.After(from) {
			from = prev
		}
		dt := now.Sub(from)
		if dt > period {
			dt = period
		}
		if dt <= 0 {
			continue
		}
		util, err := stats.DeviceUtilization(ctx, s.AllocID)
		if err != nil {
			continue // no stats is unknown, never idle
		}
		u.last[s.AllocID] = now
		if v, ok := util[s.Model]; ok {
			dev := time.Duration(s.Devices) * dt
			if err := db.AddUsed(ctx, s.AllocID, s.Model, time.Duration(v*float64(dev)), dev); err != nil {
				return err
			}
		}
	}
	for id := range u.last {
		if !seen[id] {
			delete(u.last, id)
		}
	}
	return nil
}

func (d *DB) openDeviceSegments(ctx context.Context) ([]Segment, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT alloc_id, model, devices, start_ms FROM segments WHERE open = 1 AND model <> ''`)
	if err != nil {
		return nil, fmt.Errorf("listing open device segments: %w", err)
	}
	var out []Segment
	err = scanAll(rows, func(sc func(...any) error) error {
		var s Segment
		var start int64
		if err := sc(&s.AllocID, &s.Model, &s.Devices, &start); err != nil {
			return err
		}
		s.Start = time.UnixMilli(start)
		out = append(out, s)
		return nil
	})
	return out, err
}
