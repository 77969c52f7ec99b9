package ckpt

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/plugins/shared/hclspec"
)

// Defaults of the plugin config, also declared in configSpec.
const (
	defaultCheckpointRoot = "/var/lib/allot/checkpoints"
	defaultSignal         = "SIGUSR1"
	defaultTimeout        = "60s"
	defaultSavedInterval  = "30s"
	defaultPollInterval   = "500ms"
	defaultUser           = "nobody"
)

// Isolation modes of the plugin config.
const (
	// IsolationChroot runs tasks in Nomad's isolating (libcontainer)
	// executor: a chroot built by the client, PID and IPC namespaces, a
	// device cgroup that allows only the reserved devices.
	IsolationChroot = "chroot"
	// IsolationNone runs tasks in Nomad's universal executor, like
	// raw_exec: the host's filesystem and every device node.
	IsolationNone = "none"
)

// configSpec is the plugin's agent config (plugin "nomad-driver-ckpt" { config { … } }).
var configSpec = hclspec.NewObject(map[string]*hclspec.Spec{
	"checkpoint_root": hclspec.NewDefault(
		hclspec.NewAttr("checkpoint_root", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", defaultCheckpointRoot))),
	"default_signal": hclspec.NewDefault(
		hclspec.NewAttr("default_signal", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", defaultSignal))),
	"default_timeout": hclspec.NewDefault(
		hclspec.NewAttr("default_timeout", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", defaultTimeout))),
	"saved_event_interval": hclspec.NewDefault(
		hclspec.NewAttr("saved_event_interval", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", defaultSavedInterval))),
	"poll_interval": hclspec.NewDefault(
		hclspec.NewAttr("poll_interval", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", defaultPollInterval))),
	"max_kill_timeout": hclspec.NewAttr("max_kill_timeout", "string", false),
	"no_cgroups": hclspec.NewDefault(
		hclspec.NewAttr("no_cgroups", "bool", false),
		hclspec.NewLiteral("false")),
	"isolation": hclspec.NewDefault(
		hclspec.NewAttr("isolation", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", IsolationChroot))),
	"default_user": hclspec.NewDefault(
		hclspec.NewAttr("default_user", "string", false),
		hclspec.NewLiteral(fmt.Sprintf("%q", defaultUser))),
	// A block, not a map attribute: the agent's HCL1 config turns a map
	// value into a list of maps, which a map(list(string)) attribute refuses.
	"namespace_users": hclspec.NewBlockAttrs("namespace_users", "list(string)", false),
	"allow_root": hclspec.NewDefault(
		hclspec.NewAttr("allow_root", "bool", false),
		hclspec.NewLiteral("false")),
})

// taskConfigSpec is the driver config of a task in a jobspec.
var taskConfigSpec = hclspec.NewObject(map[string]*hclspec.Spec{
	"command": hclspec.NewAttr("command", "string", true),
	"args":    hclspec.NewAttr("args", "list(string)", false),
	"checkpoint": hclspec.NewBlock("checkpoint", false, hclspec.NewObject(map[string]*hclspec.Spec{
		"signal":  hclspec.NewAttr("signal", "string", false),
		"timeout": hclspec.NewAttr("timeout", "string", false),
	})),
})

// Config is the plugin config as decoded from the agent's plugin block.
type Config struct {
	// CheckpointRoot is the absolute directory under which every task gets
	// its checkpoint directory. Several nodes need it on shared storage.
	CheckpointRoot string `codec:"checkpoint_root"`
	// DefaultSignal is the checkpoint signal of tasks that name none.
	DefaultSignal string `codec:"default_signal"`
	// DefaultTimeout is the checkpoint timeout of tasks that name none.
	DefaultTimeout string `codec:"default_timeout"`
	// SavedEventInterval rate-limits "Checkpoint saved" events for
	// checkpoints that tasks write on their own.
	SavedEventInterval string `codec:"saved_event_interval"`
	// PollInterval is how often LATEST is checked.
	PollInterval string `codec:"poll_interval"`
	// NoCgroups disables the executor's cgroup containment and the
	// driver's limits; only with isolation "none".
	NoCgroups bool `codec:"no_cgroups"`
	// MaxKillTimeout mirrors the client's max_kill_timeout, which Nomad
	// does not pass to drivers. When set, a task whose checkpoint timeout
	// cannot fit below it gets a warning event when it starts.
	MaxKillTimeout string `codec:"max_kill_timeout"`
	// Isolation is "chroot" (Nomad's isolating executor, the default) or
	// "none" (the universal executor: host filesystem, every device).
	Isolation string `codec:"isolation"`
	// DefaultUser runs tasks that name no user; never root unless
	// AllowRoot.
	DefaultUser string `codec:"default_user"`
	// NamespaceUsers maps a namespace to the users its tasks may run as,
	// besides DefaultUser. A namespace without an entry gets DefaultUser
	// only.
	NamespaceUsers map[string][]string `codec:"namespace_users"`
	// AllowRoot lets tasks run as root (uid 0).
	AllowRoot bool `codec:"allow_root"`
}

// settings is a validated Config.
type settings struct {
	root          string
	signal        syscall.Signal
	signalName    string
	timeout       time.Duration
	savedInterval time.Duration
	pollInterval  time.Duration
	noCgroups     bool
	// maxKill is zero when max_kill_timeout is not configured.
	maxKill time.Duration
	// isolation is IsolationChroot or IsolationNone.
	isolation string
	users     userRules
}

// validate checks every field and reports every problem at once.
func (c *Config) validate() (settings, error) {
	var errs []error
	s := settings{root: c.CheckpointRoot, noCgroups: c.NoCgroups, isolation: c.Isolation,
		users: userRules{defaultUser: c.DefaultUser, allowRoot: c.AllowRoot, namespaces: c.NamespaceUsers, lookupUID: hostUID}}
	if s.isolation != IsolationChroot && s.isolation != IsolationNone {
		errs = append(errs, fmt.Errorf("isolation %q must be %q or %q", s.isolation, IsolationChroot, IsolationNone))
	}
	if s.isolated() && s.noCgroups {
		errs = append(errs, fmt.Errorf("no_cgroups = true needs isolation = %q: the isolating executor allows the reserved devices through cgroups", IsolationNone))
	}
	errs = append(errs, s.users.validate()...)
	if s.root == "" || !filepath.IsAbs(s.root) {
		errs = append(errs, fmt.Errorf("checkpoint_root %q must be an absolute path", s.root))
	}
	s.root = filepath.Clean(s.root)
	var err error
	if s.signalName, s.signal, err = parseSignal(c.DefaultSignal); err != nil {
		errs = append(errs, fmt.Errorf("default_signal: %w", err))
	}
	durations := []durationField{
		{"default_timeout", c.DefaultTimeout, &s.timeout},
		{"saved_event_interval", c.SavedEventInterval, &s.savedInterval},
		{"poll_interval", c.PollInterval, &s.pollInterval},
	}
	if c.MaxKillTimeout != "" {
		durations = append(durations, durationField{"max_kill_timeout", c.MaxKillTimeout, &s.maxKill})
	}
	for _, d := range durations {
		if *d.dst, err = parsePositive(d.src); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return settings{}, fmt.Errorf("invalid ckpt plugin config: %w", err)
	}
	return s, nil
}

// durationField is one duration setting to parse into dst.
type durationField struct {
	name string
	src  string
	dst  *time.Duration
}

// TaskConfig is the driver config of one task.
type TaskConfig struct {
	// Command is the program to run.
	Command string `codec:"command"`
	// Args are its arguments.
	Args []string `codec:"args"`
	// Checkpoint says how the task is asked to checkpoint.
	Checkpoint CheckpointConfig `codec:"checkpoint"`
}

// CheckpointConfig is the task's checkpoint block.
type CheckpointConfig struct {
	// Signal is sent to the task's process group when it must stop.
	Signal string `codec:"signal"`
	// Timeout bounds the wait for the checkpoint.
	Timeout string `codec:"timeout"`
}

// taskSettings is a validated TaskConfig with the plugin defaults applied.
type taskSettings struct {
	signal     syscall.Signal
	signalName string
	timeout    time.Duration
}

// validate checks the task config against the plugin defaults.
func (tc *TaskConfig) validate(defaults settings) (taskSettings, error) {
	var errs []error
	if tc.Command == "" {
		errs = append(errs, errors.New("command must not be empty"))
	}
	ts := taskSettings{signal: defaults.signal, signalName: defaults.signalName, timeout: defaults.timeout}
	var err error
	if tc.Checkpoint.Signal != "" {
		if ts.signalName, ts.signal, err = parseSignal(tc.Checkpoint.Signal); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint.signal: %w", err))
		}
	}
	if tc.Checkpoint.Timeout != "" {
		if ts.timeout, err = parsePositive(tc.Checkpoint.Timeout); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint.timeout: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return taskSettings{}, fmt.Errorf("invalid ckpt task config: %w", err)
	}
	return ts, nil
}

func parsePositive(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return d, nil
}

// startWarning says why a task's checkpoint can never complete in time,
// when the plugin knows the client's max_kill_timeout.
func (ts taskSettings) startWarning(s settings) (event, bool) {
	if s.maxKill == 0 || ts.timeout < s.maxKill {
		return event{}, false
	}
	return warningEvent("checkpoint timeout %s is not below the client's max_kill_timeout %s, which caps kill_timeout; "+
		"stops will wait at most %s for the checkpoint", ts.timeout, s.maxKill, s.maxKill*9/10), true
}
