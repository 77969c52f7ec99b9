package ledger

import (
	"context"
	"sort"
)

// Idle cost policies.
const (
	// IdleSeparate reports idle capacity cost as its own line only.
	IdleSeparate = "separate"
	// IdleShare also shares it among the groups in proportion to their
	// allocated device cost (column idle_share); the idle line stays.
	IdleShare = "share"
)

// Rates are billing weights: a price per device-hour of each model
// ("vendor/type/name"), per GHz-hour of cpu and per GiB-hour of memory,
// in Currency.
type Rates struct {
	Currency    string
	Devices     map[string]float64
	CPUGHzHour  float64
	MemGiBHour  float64
	IdlePolicy  string
	DefaultRate float64
}

// device returns a model's rate per device-hour.
func (r Rates) device(model string) float64 {
	if v, ok := r.Devices[model]; ok {
		return v
	}
	return r.DefaultRate
}

// Cost is one group's cost over a window on both bases. Allocated is what
// was reserved (devices, cpu, memory); Used prices devices by utilization
// × time where device stats exist (cpu and memory stay at their allocated
// price: Nomad reports no per-allocation reservation use to price). Idle
// rows (Key["idle"] = "pool model") carry idle capacity.
type Cost struct {
	Key       map[string]string `json:"key"`
	Currency  string            `json:"currency"`
	Allocated float64           `json:"allocated"`
	Used      float64           `json:"used"`
	// UsedCoverage is the share of device time that had utilization
	// samples (0: the used basis is unknown, not zero).
	UsedCoverage float64 `json:"used_coverage"`
	IdleShare    float64 `json:"idle_share"`
	Devices      float64 `json:"device_hours"`
}

// CostReport is the cost of each group plus the idle lines.
type CostReport struct {
	Currency string `json:"currency"`
	Rows     []Cost `json:"rows"`
	Idle     []Cost `json:"idle"`
	// Total is Σ allocated + Σ idle: the price of all capacity that was up.
	Total float64 `json:"total"`
}

// Cost prices the usage of q (grouped by q.By plus model, so each model
// gets its rate) and the idle capacity of every pool and model.
func (d *DB) Cost(ctx context.Context, q Query, r Rates) (*CostReport, error) {
	by := append([]string(nil), q.By...)
	if len(by) == 0 {
		by = []string{"tenant"}
	}
	q.By = by
	if !contains(by, "model") {
		q.By = append(append([]string(nil), by...), "model")
	}
	rows, err := d.Usage(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &CostReport{Currency: r.Currency, Rows: priceRows(rows, by, r)}
	util, err := d.Capacity(ctx, q.Since, q.Until)
	if err != nil {
		return nil, err
	}
	var idleTotal, allocTotal float64
	for _, u := range util {
		c := Cost{Key: map[string]string{"idle": u.Pool + " " + u.Model}, Currency: r.Currency,
			Allocated: u.Idle / 3600 * r.device(u.Model), Devices: u.Idle / 3600}
		out.Idle = append(out.Idle, c)
		idleTotal += c.Allocated
	}
	for _, c := range out.Rows {
		allocTotal += c.Allocated
	}
	if r.IdlePolicy == IdleShare && allocTotal > 0 {
		for i := range out.Rows {
			out.Rows[i].IdleShare = idleTotal * out.Rows[i].Allocated / allocTotal
		}
	}
	out.Total = allocTotal + idleTotal
	return out, nil
}

// priceRows prices usage rows grouped by by+model and folds them back to by.
func priceRows(rows []Usage, by []string, r Rates) []Cost {
	m := map[string]*Cost{}
	var keys []string
	for _, u := range rows {
		key := map[string]string{}
		id := ""
		for _, b := range by {
			key[b] = u.Key[b]
			id += b + "=" + u.Key[b] + "\x00"
		}
		if t, ok := u.Key["tenant"]; ok {
			key["tenant"] = t
		}
		c := m[id]
		if c == nil {
			c = &Cost{Key: key, Currency: r.Currency}
			m[id] = c
			keys = append(keys, id)
		}
		rate := r.device(u.Key["model"])
		hours := float64(u.DeviceMS) / 3.6e6
		res := float64(u.CPUMHzMS)/1000/3.6e6*r.CPUGHzHour + float64(u.MemoryMBMS)/1024/3.6e6*r.MemGiBHour
		c.Devices += hours
		c.Allocated += hours*rate + res
		c.Used += float64(u.UsedDeviceMS)/3.6e6*rate + res
		c.UsedCoverage += float64(u.UsedSampledMS) / 3.6e6
	}
	sort.Strings(keys)
	out := make([]Cost, 0, len(keys))
	for _, k := range keys {
		c := m[k]
		switch {
		case c.Devices <= 0:
			c.UsedCoverage = 0
		case c.UsedCoverage > c.Devices:
			// A sample taken just after an allocation ended but before
			// the ledger closed its segment covers a little past its end.
			c.UsedCoverage = 1
		default:
			c.UsedCoverage /= c.Devices
		}
		out = append(out, *c)
	}
	return out
}
