package console

import (
	"net/http"
	"sort"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
)

// idleSamples is how many of a candidate's latest samples its evidence
// shows.
const idleSamples = 12

// idleCandidate is one allocation on the ladder with its evidence.
type idleCandidate struct {
	allotapi.IdleCandidate
	// Recent are its latest samples, oldest first; Spark draws their
	// utilization (a 120×24 polyline), Gaps counts samples without data.
	Recent []allotapi.IdleSample
	Spark  string
	Gaps   int
	// IdleHours is the device time observed idle.
	IdleHours float64
	// ShortAlloc is the allocation ID's first 8 characters, as Nomad
	// shows it.
	ShortAlloc string
}

// idleExemption is one exemption of a namespace's policy.
type idleExemption struct {
	Namespace, Job, Reason string
	Until                  time.Time
	Active                 bool
}

// idleData is the idle page.
type idleData struct {
	Answer     allotapi.IdleAnswer
	Candidates []idleCandidate
	Exemptions []idleExemption
	// Namespaces the exemption form offers; CanExempt when the token may
	// write namespace meta (a management token).
	Namespaces []string
	CanExempt  bool
	Form       exemptForm
	Error      string
	Flash      string
	Note       string
}

// idleView serves /ui/idle: the idle ladder's candidates with their
// evidence, the exemptions and policies, zombies (operators only) and the
// ledger's idle totals.
func (c *Console) idleView(w http.ResponseWriter, q *Req) {
	d := idleData{}
	if saved := q.R.URL.Query().Get("exempted"); saved != "" {
		d.Flash = q.L.F("idle.exempted", saved)
	}
	c.showIdle(w, q, http.StatusOK, d)
}

// showIdle renders the idle page with d's form state and messages.
func (c *Console) showIdle(w http.ResponseWriter, q *Req, status int, d idleData) {
	if err := c.api(q, "/allot/v1/idle", &d.Answer); err != nil {
		if statusOf(err) != http.StatusNotFound {
			c.apiFail(w, q, err)
			return
		}
		d.Note = q.L.T("idle.off")
	}
	now := c.opts.Now()
	for _, ca := range d.Answer.Candidates {
		d.Candidates = append(d.Candidates, idleCandidateOf(ca))
	}
	for _, p := range d.Answer.Policies {
		d.Namespaces = append(d.Namespaces, p.Namespace)
		for job, e := range p.Exemptions {
			d.Exemptions = append(d.Exemptions, idleExemption{Namespace: p.Namespace, Job: job, Reason: e.Reason,
				Until: e.Until, Active: now.Before(e.Until)})
		}
	}
	sort.Slice(d.Exemptions, func(i, j int) bool {
		a, b := d.Exemptions[i], d.Exemptions[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Job < b.Job
	})
	d.CanExempt = q.Caller != nil && q.Caller.Management()
	c.render(w, q, status, "idle", "idle.title", "", d)
}

// idleCandidateOf keeps a candidate's latest samples and draws them.
func idleCandidateOf(ca allotapi.IdleCandidate) idleCandidate {
	out := idleCandidate{IdleCandidate: ca, IdleHours: ca.IdleDeviceSeconds / 3600, ShortAlloc: ca.AllocID}
	if len(out.ShortAlloc) > 8 {
		out.ShortAlloc = out.ShortAlloc[:8]
	}
	recent := ca.Samples
	if len(recent) > idleSamples {
		recent = recent[len(recent)-idleSamples:]
	}
	out.Recent = recent
	pcts := make([]float64, len(recent))
	for i, s := range recent {
		pcts[i] = s.UtilPct
		if !s.Known {
			pcts[i] = -1
			out.Gaps++
		}
	}
	if len(pcts) > 1 {
		out.Spark = polyline(pcts)
	}
	return out
}
