package idle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// Notifier tells an allocation's owner, where `nomad alloc status` shows
// it, that it was warned or that the warning was withdrawn.
type Notifier interface {
	Notify(ctx context.Context, allocID string, n ckptevent.IdleNotice) (tasks int, err error)
}

// NomadNotifier sends the notice as a reserved pseudo-signal
// (ckptevent.IdleNotice.Signal) through Nomad's alloc signal API to each
// ckpt task of the allocation. Nomad 1.6.1 records a "Signaling" task event
// and hands the name to the driver, which writes the readable task event
// and never forwards it to the process. Other drivers are never sent it:
// Nomad's exec and raw_exec drivers turn an unknown signal name into
// SIGINT.
type NomadNotifier struct{ Client *api.Client }

// Notify implements Notifier; an allocation without ckpt tasks gets
// nothing (0 tasks, no error).
func (n NomadNotifier) Notify(ctx context.Context, allocID string, notice ckptevent.IdleNotice) (int, error) {
	q := (&api.QueryOptions{}).WithContext(ctx)
	a, _, err := n.Client.Allocations().Info(allocID, q)
	if err != nil {
		return 0, fmt.Errorf("reading allocation %s: %w", allocID, err)
	}
	tasks := ckptTasks(a)
	var errs []error
	for _, task := range tasks {
		if err := n.Client.Allocations().Signal(a, q, task, notice.Signal()); err != nil {
			errs = append(errs, fmt.Errorf("signalling task %s of allocation %s: %w", task, allocID, err))
		}
	}
	return len(tasks), errors.Join(errs...)
}

// ckptTasks lists the allocation's tasks that run on the ckpt driver.
func ckptTasks(a *api.Allocation) []string {
	if a == nil || a.Job == nil {
		return nil
	}
	var out []string
	for _, tg := range a.Job.TaskGroups {
		if tg == nil || tg.Name == nil || *tg.Name != a.TaskGroup {
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil && t.Driver == ckptevent.Driver {
				out = append(out, t.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// notice is the task-event notice of a warning or its withdrawal.
func notice(c Candidate, kind Transition, a Action) ckptevent.IdleNotice {
	if kind == Cancel {
		return ckptevent.IdleNotice{Kind: ckptevent.IdleWithdrawn}
	}
	if c.WarnOnly() {
		a = ActionWarn
	}
	return ckptevent.IdleNotice{Kind: ckptevent.IdleWarning, Since: c.IdleSince, Due: c.DueAt, Action: string(a), Class: c.Class}
}

// pendingNotice is a task event waiting for the notice sender.
type pendingNotice struct {
	log  hclog.Logger
	c    Candidate
	kind Transition
	a    Action
}

// noticeQueue bounds the notices waiting for the sender.
const noticeQueue = 1024

// notify sends a warning or withdrawal to the allocation's tasks. Under
// Run it is queued for one sender goroutine (in order), so slow Nomad
// round trips never delay the ladder's next period; otherwise (tests
// calling Once) it is sent at once. A failure is logged, the ladder goes
// on (the ledger, log and metric have it).
func (s *Service) notify(ctx context.Context, log hclog.Logger, c Candidate, kind Transition, a Action) {
	if s.o.Notifier == nil {
		return
	}
	p := pendingNotice{log: log, c: c, kind: kind, a: a}
	if s.notices == nil {
		s.sendNotice(ctx, p)
		return
	}
	select {
	case s.notices <- p:
	default: // counted, logged once a period: 10,000 at once is one line, not 9,000
		s.noticesDropped++
	}
}

// logDroppedNotices logs, once, the notices the full queue refused since
// the last call.
func (s *Service) logDroppedNotices() {
	if s.noticesDropped == 0 {
		return
	}
	s.o.Log.Warn("idle task event queue full; task events not sent (the ledger and log have the warnings)",
		"dropped", s.noticesDropped, "queue", noticeQueue)
	s.noticesDropped = 0
}

// sendNotices sends queued notices until ctx ends.
func (s *Service) sendNotices(ctx context.Context, q <-chan pendingNotice) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-q:
			s.sendNotice(ctx, p)
		}
	}
}

func (s *Service) sendNotice(ctx context.Context, p pendingNotice) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := s.o.Notifier.Notify(ctx, p.c.AllocID, notice(p.c, p.kind, p.a))
	if err != nil {
		p.log.Warn("writing the idle task event failed", "error", err)
		return
	}
	p.log.Debug("idle task event sent", "ckpt_tasks", n)
}
