// Package ckpt is the Nomad task driver "ckpt": it runs a command through
// Nomad's executor like the exec-family drivers, asks the task to
// checkpoint before any stop, and tells the next allocation where to
// resume. See README.md for the protocol.
package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/drivers/shared/eventer"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/drivers"
	"github.com/hashicorp/nomad/plugins/shared/hclspec"
	pstructs "github.com/hashicorp/nomad/plugins/shared/structs"

	"github.com/allot-sh/allot/contract/ckptevent"
)

const (
	// PluginName is the driver's name in jobspecs (driver = "ckpt").
	PluginName = ckptevent.Driver
	// PluginVersion is the driver's version.
	PluginVersion = "0.1.0"
	// fingerprintPeriod is how often the driver re-checks its health.
	fingerprintPeriod = 30 * time.Second
	// taskHandleVersion is the version of the handles StartTask returns.
	taskHandleVersion = 1
)

var pluginInfo = &base.PluginInfoResponse{
	Type:              base.PluginTypeDriver,
	PluginApiVersions: []string{drivers.ApiVersion010},
	PluginVersion:     PluginVersion,
	Name:              PluginName,
}

// capabilities are what the driver really supports: signals and exec
// through the executor, no filesystem isolation (like raw_exec), host or
// group networking. Resource limits have no capability flag in Nomad 1.6;
// they are enforced through cgroups where the host allows (enforce.go).
var capabilities = &drivers.Capabilities{
	SendSignals:       true,
	Exec:              true,
	FSIsolation:       drivers.FSIsolationNone,
	NetIsolationModes: []drivers.NetIsolationMode{drivers.NetIsolationModeHost, drivers.NetIsolationModeGroup},
	MountConfigs:      drivers.MountConfigSupportNone,
}

// Driver is the ckpt task driver.
type Driver struct {
	eventer     *eventer.Eventer
	settings    settings
	configured  bool
	nomadConfig *base.ClientDriverConfig
	tasks       *taskStore
	ctx         context.Context
	logger      hclog.Logger
	clock       Clock
	newLimiter  func(*drivers.TaskConfig) limiter
}

// NewPlugin returns the driver; its signature fits plugins.ServeCtx.
func NewPlugin(ctx context.Context, logger hclog.Logger) interface{} {
	return New(ctx, logger)
}

// New returns a driver that stops its background work when ctx ends.
func New(ctx context.Context, logger hclog.Logger) *Driver {
	logger = logger.Named(PluginName)
	return &Driver{
		eventer:    eventer.NewEventer(ctx, logger),
		tasks:      newTaskStore(),
		ctx:        ctx,
		logger:     logger,
		clock:      realClock{},
		newLimiter: defaultLimiter,
	}
}

// PluginInfo describes the plugin.
func (d *Driver) PluginInfo() (*base.PluginInfoResponse, error) { return pluginInfo, nil }

// ConfigSchema is the plugin config's schema.
func (d *Driver) ConfigSchema() (*hclspec.Spec, error) { return configSpec, nil }

// TaskConfigSchema is the task config's schema.
func (d *Driver) TaskConfigSchema() (*hclspec.Spec, error) { return taskConfigSpec, nil }

// Capabilities reports what the driver supports.
func (d *Driver) Capabilities() (*drivers.Capabilities, error) {
	return capabilitiesFor(d.settings), nil
}

// SetConfig decodes and validates the plugin config; a bad config is an
// error that names every problem.
func (d *Driver) SetConfig(cfg *base.Config) error {
	var c Config
	if len(cfg.PluginConfig) != 0 {
		if err := base.MsgPackDecode(cfg.PluginConfig, &c); err != nil {
			return fmt.Errorf("decoding ckpt plugin config: %w", err)
		}
	}
	fillDefaults(&c)
	s, err := c.validate()
	if err != nil {
		return err
	}
	d.settings, d.configured = s, true
	if cfg.AgentConfig != nil {
		d.nomadConfig = cfg.AgentConfig.Driver
	}
	return nil
}

// fillDefaults covers callers (tests, old agents) that skip the hclspec
// defaults.
func fillDefaults(c *Config) {
	for _, f := range []struct {
		v   *string
		def string
	}{
		{&c.CheckpointRoot, defaultCheckpointRoot}, {&c.DefaultSignal, defaultSignal},
		{&c.DefaultTimeout, defaultTimeout}, {&c.SavedEventInterval, defaultSavedInterval},
		{&c.PollInterval, defaultPollInterval}, {&c.Isolation, IsolationChroot}, {&c.DefaultUser, defaultUser},
	} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
}

// Fingerprint reports the driver healthy while checkpoint_root is usable.
func (d *Driver) Fingerprint(ctx context.Context) (<-chan *drivers.Fingerprint, error) {
	ch := make(chan *drivers.Fingerprint)
	go func() {
		defer close(ch)
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.ctx.Done():
				return
			case <-timer.C:
				timer.Reset(fingerprintPeriod)
				select {
				case ch <- d.fingerprint():
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch, nil
}

func (d *Driver) fingerprint() *drivers.Fingerprint {
	if !d.configured {
		return &drivers.Fingerprint{Health: drivers.HealthStateUndetected, HealthDescription: "not configured"}
	}
	if reason := isolationUnsupported(runtime.GOOS, os.Geteuid()); d.settings.isolated() && reason != "" {
		return &drivers.Fingerprint{Health: drivers.HealthStateUnhealthy, HealthDescription: reason}
	}
	root := d.settings.root
	if err := os.MkdirAll(root, 0o711); err != nil {
		return &drivers.Fingerprint{Health: drivers.HealthStateUnhealthy,
			HealthDescription: fmt.Sprintf("checkpoint_root %s is not usable: %v", root, err)}
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return &drivers.Fingerprint{Health: drivers.HealthStateUnhealthy,
			HealthDescription: fmt.Sprintf("checkpoint_root %s is not a directory", root)}
	}
	return &drivers.Fingerprint{
		Health:            drivers.HealthStateHealthy,
		HealthDescription: drivers.DriverHealthy,
		Attributes: map[string]*pstructs.Attribute{
			"driver.ckpt":                 pstructs.NewBoolAttribute(true),
			"driver.ckpt.checkpoint_root": pstructs.NewStringAttribute(root),
			"driver.ckpt.version":         pstructs.NewStringAttribute(PluginVersion),
			"driver.ckpt.isolation":       pstructs.NewStringAttribute(d.settings.isolation),
		},
	}
}

// TaskEvents streams the driver's task events to the client.
func (d *Driver) TaskEvents(ctx context.Context) (<-chan *drivers.TaskEvent, error) {
	return d.eventer.TaskEvents(ctx)
}

// emitter returns a function that sends events for one task.
func (d *Driver) emitter(cfg *drivers.TaskConfig) func(event) {
	return func(ev event) {
		err := d.eventer.EmitEvent(&drivers.TaskEvent{
			TaskID: cfg.ID, AllocID: cfg.AllocID, TaskName: cfg.Name,
			Timestamp: d.clock.Now(), Message: ev.msg, Annotations: ev.ann,
		})
		if err != nil {
			d.logger.Warn("emitting task event", "task_id", cfg.ID, "message", ev.msg, "error", err)
		}
	}
}

// WaitTask returns a channel that receives the task's exit.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	h, ok := d.tasks.get(taskID)
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	h.held.release()
	ch := make(chan *drivers.ExitResult)
	go func() {
		defer close(ch)
		result := &drivers.ExitResult{}
		ps, err := h.exec.Wait(ctx)
		if err != nil {
			result.Err = fmt.Errorf("executor: waiting for the task: %w", err)
		} else {
			result.ExitCode, result.Signal = ps.ExitCode, ps.Signal
			result.OOMKilled = h.oomKilled()
		}
		select {
		case <-ctx.Done():
		case <-d.ctx.Done():
		case ch <- result:
		}
	}()
	return ch, nil
}

// StopTask runs the stop protocol: checkpoint signal → wait for LATEST or
// exit → kill_signal → rest of timeout → SIGKILL.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	h, ok := d.tasks.get(taskID)
	if !ok {
		return drivers.ErrTaskNotFound
	}
	h.held.release()
	return h.stop(timeout, signal)
}

// DestroyTask forgets a task, killing it first when force is set.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	h, ok := d.tasks.get(taskID)
	if !ok {
		return drivers.ErrTaskNotFound
	}
	if h.IsRunning() && !force {
		return errors.New("cannot destroy a running task")
	}
	h.cancelWatch()
	if !h.pluginClient.Exited() {
		if h.executorShutdownSafe() { // not when its pid was recycled (recover.go)
			if err := h.exec.Shutdown("", 0); err != nil {
				h.logger.Error("destroying executor failed", "error", err)
			}
		}
		h.pluginClient.Kill()
	}
	h.removeLimits()
	d.tasks.delete(taskID)
	return nil
}

// InspectTask reports a task's status.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, ok := d.tasks.get(taskID)
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return h.TaskStatus(), nil
}

// TaskStats streams the executor's resource usage of a task.
func (d *Driver) TaskStats(ctx context.Context, taskID string, interval time.Duration) (<-chan *drivers.TaskResourceUsage, error) {
	h, ok := d.tasks.get(taskID)
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return h.exec.Stats(ctx, interval)
}
