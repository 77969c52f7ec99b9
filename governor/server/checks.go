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
	for _, a := range ch.Amounts {
		out.Amounts = append(out.Amounts, allotapi.Amount{Resource: a.Resource, Need: a.Need, Used: a.Used,
			Cap: a.Cap, Borrowable: a.Borrowable, Over: a.Over})
	}
	return out
}

// reasonCheck is the failing check of v whose text v's reason is
// ("<name>: <text>", as the engine writes a queued job's reason), nil when
// the reason says something else (a fresh job that fits now, a dispatched
// child, a running job).
func reasonCheck(rd auth.Redactor, v *engine.Verdict) *allotapi.Check {
	for i := range v.Checks {
		ch := &v.Checks[i]
		if ch.OK {
			continue
		}
		n := len(ch.Name)
		if len(v.Reason) <= n+2 || v.Reason[:n] != ch.Name || v.Reason[n:n+2] != ": " {
			return nil
		}
		if v.Reason[n+2:] != ch.Text() {
			return nil
		}
		c := apiCheck(rd, ch)
		return &c
	}
	return nil
}
