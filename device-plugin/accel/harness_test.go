package accel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/nomad/helper/pluginutils/hclspecutils"
	"github.com/hashicorp/nomad/helper/pluginutils/hclutils"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/device"
	"github.com/shoenig/test/must"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/allot-sh/allot/device-plugin/accel"
	"github.com/allot-sh/allot/device-plugin/inventory"
)

// fakeBackend is a Backend with function fields.
type fakeBackend struct {
	name          string
	mu            sync.Mutex
	FingerprintFn func() ([]accel.Device, error)
	StatsFn       func([]accel.Device) (map[string]accel.Stats, error)
}

func (f *fakeBackend) Name() string { return f.name }
func (f *fakeBackend) Fingerprint(context.Context) ([]accel.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.FingerprintFn()
}
func (f *fakeBackend) Stats(_ context.Context, d []accel.Device) (map[string]accel.Stats, error) {
	if f.StatsFn == nil {
		return map[string]accel.Stats{}, nil
	}
	return f.StatsFn(d)
}
func (f *fakeBackend) Close() error { return nil }

// set swaps the fingerprint function while the plugin runs.
func (f *fakeBackend) set(fn func() ([]accel.Device, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.FingerprintFn = fn
}

// factories returns the real inventory factory plus fakes under their
// names.
func factories(fakes ...*fakeBackend) map[string]accel.Factory {
	fs := map[string]accel.Factory{inventory.BackendName: inventory.Factory(hclog.NewNullLogger())}
	for _, f := range fakes {
		f := f
		fs[f.name] = func(*accel.Config) (accel.Backend, error) { return f, nil }
	}
	return fs
}

// serveGRPC serves p through Nomad's real plugin gRPC server and returns
// the client side, as the Nomad client would see it.
func serveGRPC(t *testing.T, p *accel.Plugin) device.DevicePlugin {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, map[string]plugin.Plugin{
		base.PluginTypeBase:   &base.PluginBase{Impl: p},
		base.PluginTypeDevice: &device.PluginDevice{Impl: p},
	})
	t.Cleanup(func() {
		// Closing the client shuts the server down through go-plugin's
		// controller; stopping it here as well races inside go-plugin.
		client.Close()
		p.Close()
	})
	raw, err := client.Dispense(base.PluginTypeDevice)
	must.NoError(t, err)
	return raw.(device.DevicePlugin)
}

// configure encodes cfg (agent-config keys) the way Nomad's plugin loader
// does, through the plugin's own hclspec, and calls SetConfig.
func configure(t *testing.T, dp device.DevicePlugin, cfg map[string]any) error {
	t.Helper()
	schema, err := dp.ConfigSchema()
	must.NoError(t, err)
	spec, diags := hclspecutils.Convert(schema)
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	val, diags, errs := hclutils.ParseHclInterface(cfg, spec, nil)
	if diags.HasErrors() || len(errs) > 0 {
		t.Fatalf("config %v: %v %v", cfg, diags, errs)
	}
	data, err := msgpack.Marshal(val, val.Type())
	must.NoError(t, err)
	return dp.SetConfig(&base.Config{PluginConfig: data})
}

// stream is a running fingerprint stream.
type stream struct {
	t  *testing.T
	ch <-chan *device.FingerprintResponse
}

func startFingerprint(t *testing.T, dp device.DevicePlugin) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := dp.Fingerprint(ctx)
	must.NoError(t, err)
	return &stream{t: t, ch: ch}
}

// next returns the next fingerprint, failing after a deadline.
func (s *stream) next() *device.FingerprintResponse {
	s.t.Helper()
	select {
	case r, ok := <-s.ch:
		must.True(s.t, ok, must.Sprint("fingerprint stream closed"))
		return r
	case <-time.After(10 * time.Second):
		s.t.Fatalf("no fingerprint within 10s")
		return nil
	}
}

// until returns the first fingerprint cond accepts.
func (s *stream) until(cond func([]*device.DeviceGroup) bool) []*device.DeviceGroup {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r := s.next()
		must.NoError(s.t, r.Error)
		if cond(r.Devices) {
			return r.Devices
		}
	}
	s.t.Fatalf("no matching fingerprint within 10s")
	return nil
}

func group(groups []*device.DeviceGroup, name string) *device.DeviceGroup {
	for _, g := range groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}
