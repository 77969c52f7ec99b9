package ckpt

import (
	"fmt"
	"time"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// AnnIdleNotice is the annotation naming an idle notice's kind
// (ckptevent.IdleWarning or IdleWithdrawn) on the task event it becomes.
const AnnIdleNotice = "allot_idle_notice"

// idleNotice turns a reserved idle pseudo-signal (ALLOT_IDLE_*, sent by
// the governor through Nomad's alloc signal API, the only way to reach a
// task from outside the client in Nomad 1.6.1) into a task event. It is
// never forwarded to the process: the task never sees it. A malformed
// reserved name is refused, and still not forwarded.
func (h *taskHandle) idleNotice(name string) error {
	n, err := ckptevent.ParseIdleSignal(name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignal, err)
	}
	ann := map[string]string{AnnIdleNotice: n.Kind}
	if n.Kind == ckptevent.IdleWarning {
		ann["idle_since"], ann["due_at"], ann["action"] = n.Since.UTC().Format(time.RFC3339), n.Due.UTC().Format(time.RFC3339), n.Action
	}
	h.emit(event{msg: n.Message(), ann: ann})
	return nil
}
