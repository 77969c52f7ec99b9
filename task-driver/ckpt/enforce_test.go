package ckpt

import (
	"errors"
	"os"
	"testing"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/nomad/structs"
	"github.com/hashicorp/nomad/plugins/drivers"
	"github.com/shoenig/test/must"
)

// fakeLimiter records what the driver asks of it.
type fakeLimiter struct {
	err     error
	applied []limits
}

func (f *fakeLimiter) Apply(_ int, l limits) error { f.applied = append(f.applied, l); return f.err }
func (f *fakeLimiter) OOMKilled() bool             { return false }
func (f *fakeLimiter) Remove() error               { return nil }

func TestEnforceLimits(t *testing.T) {
	withMem := &drivers.Resources{NomadResources: &structs.AllocatedTaskResources{
		Memory: structs.AllocatedMemoryResources{MemoryMB: 64},
	}}
	root := os.Geteuid() == 0
	tests := map[string]struct {
		res       *drivers.Resources
		noCgroups bool
		applyErr  error
		wantEvent string // "" when no event is expected
		wantApply int
		pidReused bool // the handle's pid now names another process
	}{
		"applied":               {res: withMem, wantApply: 1},
		"apply fails":           {res: withMem, applyErr: errors.New("writing memory.max: permission denied"), wantEvent: MsgLimitsNotEnforced + "writing memory.max: permission denied", wantApply: 1},
		"no_cgroups":            {res: withMem, noCgroups: true, wantEvent: MsgLimitsNotEnforced + "no_cgroups is set in the plugin config"},
		"no limits asked":       {res: nil},
		"audit #28: pid reused": {res: withMem, pidReused: true, wantEvent: MsgLimitsNotEnforced + "the pid is not verified to be the task's: pid "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if !root && !tc.noCgroups && tc.res != nil {
				// Not root: the driver must say so instead of trying.
				tc.wantEvent, tc.wantApply = MsgLimitsNotEnforced+"the plugin does not run as root", 0
			}
			fl := &fakeLimiter{err: tc.applyErr}
			d := &Driver{settings: settings{noCgroups: tc.noCgroups},
				newLimiter: func(*drivers.TaskConfig) limiter { return fl }}
			var got []event
			h := &taskHandle{pid: os.Getpid(), logger: hclog.NewNullLogger(), emit: func(e event) { got = append(got, e) }}
			h.guard = thisProcessGuard(t)
			if tc.pidReused {
				h.guard.want.StartTicks++
			}
			d.enforceLimits(h, &drivers.TaskConfig{Resources: tc.res})
			must.Eq(t, tc.wantApply, len(fl.applied))
			if tc.wantEvent == "" {
				must.SliceEmpty(t, got)
				return
			}
			must.SliceLen(t, 1, got)
			must.StrHasPrefix(t, tc.wantEvent, got[0].msg)
		})
	}
}
