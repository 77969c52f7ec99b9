package server

import (
	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
)

// apiCheck is the wire form of an engine check: its English text as
// Detail (as before) plus its structured parts, names passed through the
// caller's redactor like the text.
func apiCheck(rd auth.Redactor, ch *engine.Check) allotapi.Check {
	out := allotapi.Check{Name: ch.Name, OK: ch.OK, Detail: rd.Text(ch.Text()), Permanent: ch.Permanent,
		Tenant: rd.Text(ch.Tenant), Cohort: rd.Text(ch.Cohort), MetaErr: rd.Text(ch.MetaErr)}
	// allotapi may not import the engine (a leaf the CLI imports), so it
	// mirrors engine.Amount; the conversion stops compiling if they drift.
	for _, a := range ch.Amounts {
		out.Amounts = append(out.Amounts, allotapi.Amount(a))
	}
	return out
}

// reasonChecks converts the failing checks of one answer's verdicts. The
// engine's memo shares one failing check among the verdicts of a tenant's
// jobs of one shape, so each shared check is rendered and converted once
// per answer (the entries then share the read-only result).
type reasonChecks struct {
	rd   auth.Redactor
	seen map[*engine.Check]reasonDone
}

type reasonDone struct {
	text string
	api  *allotapi.Check
}

func newReasonChecks(rd auth.Redactor) *reasonChecks {
	return &reasonChecks{rd: rd, seen: map[*engine.Check]reasonDone{}}
}

// of is the failing check of v whose text v's reason is ("<name>:
// <text>", as the engine writes a queued job's reason), nil when the
// reason says something else (a fresh job that fits now, a dispatched
// child, a running job).
func (r *reasonChecks) of(v *engine.Verdict) *allotapi.Check {
	for i := range v.Checks {
		ch := &v.Checks[i]
		if ch.OK {
			continue
		}
		n := len(ch.Name)
		if len(v.Reason) <= n+2 || v.Reason[:n] != ch.Name || v.Reason[n:n+2] != ": " {
			return nil
		}
		done, ok := r.seen[ch]
		if !ok {
			c := apiCheck(r.rd, ch)
			done = reasonDone{text: ch.Text(), api: &c}
			r.seen[ch] = done
		}
		if v.Reason[n+2:] != done.text {
			return nil
		}
		return done.api
	}
	return nil
}

// reasonCheck is the structured failing check of queued job ns/id for
// caller c in the latest plan, as queueFor gives it, when the job's reason
// (redacted for c) is still reason: the console asks it for the rows a
// page shows. Nil otherwise.
func (s *Server) reasonCheck(c *auth.Caller, ns, id, reason string) *allotapi.Check {
	p := s.Plans.Latest()
	if p == nil || !c.CanRead(ns) {
		return nil
	}
	v := p.Verdicts[ns+"/"+id]
	if v == nil {
		return nil
	}
	rd := c.Redactor(s.Store.Namespaces())
	if rd.Text(v.Reason) != reason {
		return nil
	}
	return newReasonChecks(rd).of(v)
}
