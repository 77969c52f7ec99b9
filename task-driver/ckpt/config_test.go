package ckpt

import (
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func validConfig() *Config {
	c := &Config{CheckpointRoot: "/ck"}
	fillDefaults(c)
	return c
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]struct {
		edit    func(*Config)
		wantErr []string
	}{
		"defaults":             {edit: func(*Config) {}},
		"relative root":        {edit: func(c *Config) { c.CheckpointRoot = "ck" }, wantErr: []string{"checkpoint_root"}},
		"bad signal":           {edit: func(c *Config) { c.DefaultSignal = "SIGNOPE" }, wantErr: []string{"default_signal"}},
		"sigkill refused":      {edit: func(c *Config) { c.DefaultSignal = "SIGKILL" }, wantErr: []string{"cannot catch"}},
		"bad max_kill_timeout": {edit: func(c *Config) { c.MaxKillTimeout = "ten minutes" }, wantErr: []string{"max_kill_timeout"}},
		"every problem at once": {
			edit:    func(c *Config) { c.DefaultSignal = "x"; c.DefaultTimeout = "-1s"; c.PollInterval = "soon" },
			wantErr: []string{"default_signal", "default_timeout", "poll_interval"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := validConfig()
			tc.edit(c)
			s, err := c.validate()
			if len(tc.wantErr) == 0 {
				must.NoError(t, err)
				must.Eq(t, syscall.SIGUSR1, s.signal)
				must.Eq(t, time.Minute, s.timeout)
				return
			}
			must.Error(t, err)
			for _, want := range tc.wantErr {
				must.StrContains(t, err.Error(), want)
			}
		})
	}
}

func TestTaskConfigValidate(t *testing.T) {
	defaults, err := validConfig().validate()
	must.NoError(t, err)
	cases := map[string]struct {
		tc         TaskConfig
		wantSignal syscall.Signal
		wantName   string
		wantTO     time.Duration
		wantErr    string
	}{
		"plugin defaults":   {tc: TaskConfig{Command: "x"}, wantSignal: syscall.SIGUSR1, wantName: "SIGUSR1", wantTO: time.Minute},
		"short signal name": {tc: TaskConfig{Command: "x", Checkpoint: CheckpointConfig{Signal: "usr2", Timeout: "5s"}}, wantSignal: syscall.SIGUSR2, wantName: "SIGUSR2", wantTO: 5 * time.Second},
		"invalid signal":    {tc: TaskConfig{Command: "x", Checkpoint: CheckpointConfig{Signal: "SIGFOO"}}, wantErr: "checkpoint.signal"},
		"sigstop":           {tc: TaskConfig{Command: "x", Checkpoint: CheckpointConfig{Signal: "SIGSTOP"}}, wantErr: "cannot catch"},
		"zero timeout":      {tc: TaskConfig{Command: "x", Checkpoint: CheckpointConfig{Timeout: "0s"}}, wantErr: "checkpoint.timeout"},
		"no command":        {tc: TaskConfig{}, wantErr: "command"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ts, err := tc.tc.validate(defaults)
			if tc.wantErr != "" {
				must.ErrorContains(t, err, tc.wantErr)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.wantSignal, ts.signal)
			must.Eq(t, tc.wantName, ts.signalName)
			must.Eq(t, tc.wantTO, ts.timeout)
		})
	}
}

func TestKillSignal(t *testing.T) {
	sig, err := killSignal("")
	must.NoError(t, err)
	must.Eq(t, syscall.SIGINT, sig)
	sig, err = killSignal("SIGTERM")
	must.NoError(t, err)
	must.Eq(t, syscall.SIGTERM, sig)
	_, err = killSignal("SIGWHAT")
	must.ErrorIs(t, err, ErrBadSignal)
}

func TestStartWarning(t *testing.T) {
	cases := map[string]struct {
		maxKill, timeout time.Duration
		warn             bool
	}{
		"max_kill_timeout unknown":  {timeout: time.Hour},
		"fits below":                {maxKill: 10 * time.Minute, timeout: 2 * time.Minute},
		"equal":                     {maxKill: 30 * time.Second, timeout: 30 * time.Second, warn: true},
		"above Nomad's 30s default": {maxKill: 30 * time.Second, timeout: 2 * time.Minute, warn: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ev, warn := taskSettings{timeout: tc.timeout}.startWarning(settings{maxKill: tc.maxKill})
			must.Eq(t, tc.warn, warn)
			if warn {
				must.StrContains(t, ev.msg, "max_kill_timeout")
			}
		})
	}
}
