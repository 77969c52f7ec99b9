package accel

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/device"
	"github.com/hashicorp/nomad/plugins/shared/hclspec"
)

// PluginName is the plugin's name, its binary and its agent config label.
const PluginName = "nomad-device-accel"

// PluginVersion is reported to Nomad.
const PluginVersion = "v0.1.0"

// detectOrder is the order "detect" tries the hardware backends in.
var detectOrder = []string{"nvml", "ascend"}

// Plugin is the nomad-device-accel device plugin.
type Plugin struct {
	logger    hclog.Logger
	factories map[string]Factory

	// roundMu serialises calls into the backends (fingerprint rounds and
	// stats collections); it is always taken before mu.
	roundMu sync.Mutex
	// mu guards everything below; fingerprinting, stats and Reserve run on
	// different goroutines. Nobody calls a backend while holding it.
	mu       sync.Mutex
	cfg      *Config
	backends []Backend
	// opened is true once backends were opened for cfg.
	opened bool
	// lastGood holds each backend's last successful fingerprint, so a bad
	// read degrades to "unhealthy" instead of making devices vanish.
	lastGood map[string][]Device
	lastErr  map[string]string
	// devices is the latest snapshot by ID, for Reserve and Stats.
	devices map[string]Device
}

var _ device.DevicePlugin = (*Plugin)(nil)

// New returns a plugin that opens its backends through factories, keyed by
// backend name ("nvml", "ascend", "inventory").
func New(logger hclog.Logger, factories map[string]Factory) *Plugin {
	return &Plugin{
		logger:    logger.Named("accel"),
		factories: factories,
		lastGood:  map[string][]Device{},
		lastErr:   map[string]string{},
		devices:   map[string]Device{},
	}
}

// PluginInfo describes the plugin to Nomad.
func (p *Plugin) PluginInfo() (*base.PluginInfoResponse, error) {
	return &base.PluginInfoResponse{
		Type:              base.PluginTypeDevice,
		PluginApiVersions: []string{device.ApiVersion010},
		PluginVersion:     PluginVersion,
		Name:              PluginName,
	}, nil
}

// ConfigSchema returns the plugin's hclspec.
func (p *Plugin) ConfigSchema() (*hclspec.Spec, error) { return configSpec, nil }

// SetConfig decodes and validates the plugin config. Backends are opened
// on first use, so a plugin loaded only for its schema touches no hardware.
func (p *Plugin) SetConfig(c *base.Config) error {
	cfg := DefaultConfig()
	if c != nil && len(c.PluginConfig) > 0 {
		if err := base.MsgPackDecode(c.PluginConfig, cfg); err != nil {
			return fmt.Errorf("decoding nomad-device-accel config: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeBackendsLocked()
	p.cfg = cfg
	p.logger.Info("config set", "config", cfg.String())
	return nil
}

// Close releases every backend.
func (p *Plugin) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeBackendsLocked()
}

func (p *Plugin) closeBackendsLocked() {
	for _, b := range p.backends {
		if err := b.Close(); err != nil {
			p.logger.Warn("closing backend", "backend", b.Name(), "error", err)
		}
	}
	p.backends, p.opened = nil, false
}

// config returns the current config or an error before SetConfig.
func (p *Plugin) config() (*Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg == nil {
		return nil, errors.New("nomad-device-accel: SetConfig was not called")
	}
	return p.cfg, nil
}

// backendNames resolves "detect" into concrete backend names.
func backendNames(cfg *Config) (names []string, detect bool) {
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, b := range cfg.Backends {
		if b != "detect" {
			add(b)
			continue
		}
		detect = true
		if cfg.InventoryFile != "" {
			add("inventory")
			continue
		}
		for _, n := range detectOrder {
			add(n)
		}
	}
	return names, detect
}

// openBackendsLocked opens the configured backends once per config. A
// backend named explicitly that fails to open is reported as a fingerprint
// error of that backend; under "detect" a missing one is skipped.
func (p *Plugin) openBackendsLocked() {
	if p.opened {
		return
	}
	names, detect := backendNames(p.cfg)
	for _, n := range names {
		f := p.factories[n]
		if f == nil {
			p.lastErr[n] = fmt.Sprintf("backend %s is not built into this binary", n)
			continue
		}
		b, err := f(p.cfg)
		if err != nil {
			if detect && errors.Is(err, ErrNotDetected) {
				p.logger.Debug("backend not detected", "backend", n, "error", err)
				continue
			}
			p.logger.Error("opening backend", "backend", n, "error", err)
			p.backends = append(p.backends, &failedBackend{name: n, err: err})
			continue
		}
		p.logger.Info("backend opened", "backend", n)
		p.backends = append(p.backends, b)
	}
	p.opened = true
}

// failedBackend stands in for a backend that could not be opened, so the
// failure shows up on every fingerprint until the config changes.
type failedBackend struct {
	name string
	err  error
}

func (f *failedBackend) Name() string { return f.name }
func (f *failedBackend) Fingerprint(context.Context) ([]Device, error) {
	return nil, &FingerprintError{Backend: f.name, Err: f.err}
}
func (f *failedBackend) Stats(context.Context, []Device) (map[string]Stats, error) {
	return nil, nil
}
func (f *failedBackend) Close() error { return nil }

// SetConfigDirect installs an already decoded config (for tools such as
// accel-probe that run the plugin without Nomad).
func (p *Plugin) SetConfigDirect(cfg *Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeBackendsLocked()
	p.cfg = cfg
	return nil
}
