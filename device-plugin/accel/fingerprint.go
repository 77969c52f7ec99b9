package accel

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/plugins/device"
)

// Fingerprint streams the node's device groups: once at once, then again
// whenever devices, attributes or health change, checked every
// fingerprint_period.
//
// A backend that cannot read its input (malformed inventory file,
// unparsable npu-smi output) does not end the stream: Nomad 1.6.1's device
// manager stops the plugin for good on a FingerprintResponse.Error
// (client/devicemanager/instance.go), so the plugin instead keeps that
// backend's last known devices, marks them unhealthy with the error as the
// health description, logs it, and recovers on the first good read.
func (p *Plugin) Fingerprint(ctx context.Context) (<-chan *device.FingerprintResponse, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	out := make(chan *device.FingerprintResponse)
	go p.fingerprintLoop(ctx, cfg.Period(), out)
	return out, nil
}

func (p *Plugin) fingerprintLoop(ctx context.Context, period time.Duration, out chan<- *device.FingerprintResponse) {
	defer close(out)
	timer := time.NewTimer(0)
	defer timer.Stop()
	last := ""
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		groups := p.FingerprintOnce(ctx)
		if key := fingerprintKey(groups); first || key != last {
			select {
			case out <- device.NewFingerprint(groups...):
			case <-ctx.Done():
				return
			}
			first, last = false, key
		}
		timer.Reset(period)
	}
}

// FingerprintOnce reads every backend once and returns the device groups.
func (p *Plugin) FingerprintOnce(ctx context.Context) []*device.DeviceGroup {
	devs, grouping := p.snapshot(ctx)
	return BuildGroups(devs, grouping)
}

// Devices reads every backend once and returns the devices offered to
// Nomad (ignored devices left out).
func (p *Plugin) Devices(ctx context.Context) []Device {
	devs, _ := p.snapshot(ctx)
	return devs
}

// LastErrors returns, per backend, the error of its latest fingerprint
// (absent when it succeeded).
func (p *Plugin) LastErrors() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.lastErr))
	for k, v := range p.lastErr {
		out[k] = v
	}
	return out
}

// snapshot fingerprints every backend. Backends run outside p.mu, so a
// slow npu-smi does not hold up Reserve; roundMu keeps rounds (the loop,
// Reserve's first-use round, the probe) from running a backend twice at
// once.
func (p *Plugin) snapshot(ctx context.Context) ([]Device, string) {
	p.roundMu.Lock()
	defer p.roundMu.Unlock()
	p.mu.Lock()
	if p.cfg == nil {
		p.mu.Unlock()
		return nil, GroupingNone
	}
	p.openBackendsLocked()
	cfg, bs := p.cfg, append([]Backend(nil), p.backends...)
	p.mu.Unlock()

	type result struct {
		devs []Device
		err  error
	}
	results := make([]result, len(bs))
	for i, b := range bs {
		results[i].devs, results[i].err = b.Fingerprint(ctx)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg != cfg {
		// SetConfig replaced the backends meanwhile; the next round uses
		// the new ones.
		return nil, p.cfg.TopologyGrouping
	}
	ignored := map[string]bool{}
	for _, id := range cfg.IgnoredDevices {
		ignored[id] = true
	}
	var all []Device
	devices := map[string]Device{}
	for i, b := range bs {
		for _, d := range p.recordLocked(b.Name(), results[i].devs, results[i].err) {
			if ignored[d.ID] || ignored[d.MIGParent] && d.MIGParent != "" {
				continue
			}
			all = append(all, d)
			devices[d.ID] = d
		}
	}
	p.devices = devices
	return all, cfg.TopologyGrouping
}

// recordLocked stores a backend's fingerprint result and returns the
// devices to offer: the fresh ones, or after an error the last good ones
// marked unhealthy with the error.
func (p *Plugin) recordLocked(name string, devs []Device, err error) []Device {
	if err == nil {
		if prev, ok := p.lastErr[name]; ok {
			p.logger.Info("backend recovered", "backend", name, "previous_error", prev)
			delete(p.lastErr, name)
		}
		p.lastGood[name] = devs
		return devs
	}
	msg := err.Error()
	if p.lastErr[name] != msg {
		p.logger.Error("fingerprint failed; keeping last known devices as unhealthy", "backend", name, "error", err)
	}
	p.lastErr[name] = msg
	prev := p.lastGood[name]
	degraded := make([]Device, len(prev))
	for i, d := range prev {
		d.Healthy = false
		d.HealthDesc = fmt.Sprintf("fingerprint error: %s", msg)
		degraded[i] = d
	}
	return degraded
}
