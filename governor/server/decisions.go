package server

import (
	"net/http"
	"sort"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/reconcile"
)

// classes serves GET /allot/v1/classes: the configured priority classes,
// highest priority first (then by name).
func (s *Server) classes(w http.ResponseWriter, r *http.Request, _ *auth.Caller) {
	out := allotapi.ClassList{Classes: []allotapi.Class{}}
	for name, c := range s.Classes {
		out.Classes = append(out.Classes, allotapi.Class{Name: name, Priority: c.Priority, Preemptible: c.Preemptible, Restricted: c.Restricted})
	}
	sort.Slice(out.Classes, func(i, j int) bool {
		a, b := out.Classes[i], out.Classes[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Name < b.Name
	})
	allotapi.WriteJSON(w, http.StatusOK, out)
}

// decisions serves GET /allot/v1/decisions: recent preemptions, requeues
// and holds, newest first. A caller sees a record when it may read the
// namespace of its job or of one of its victims; a party in a namespace it
// may not read shows as "(hidden)", namespace and class included (audit
// #27), and texts naming one are redacted.
func (s *Server) decisions(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	out := allotapi.DecisionList{Decisions: []allotapi.Decision{}}
	if s.Journal != nil {
		rd := c.Redactor(s.Store.Namespaces())
		for _, rec := range s.Journal.Recent() {
			if d, ok := decisionOf(rec, c.CanRead, rd); ok {
				out.Decisions = append(out.Decisions, d)
			}
		}
	}
	allotapi.WriteJSON(w, http.StatusOK, out)
}

func decisionOf(rec reconcile.Record, canRead func(string) bool, rd auth.Redactor) (allotapi.Decision, bool) {
	d := allotapi.Decision{Time: rec.Time, Kind: rec.Kind, Namespace: rec.Namespace, JobID: rec.JobID, Class: rec.Class,
		Cause: rec.Cause, Reason: rd.Text(rec.Reason)}
	seen := canRead(rec.Namespace)
	if !seen {
		d.Namespace, d.JobID, d.Class, d.Reason = auth.Hidden, auth.Hidden, "", auth.Hidden
	}
	for _, v := range rec.Victims {
		gv := allotapi.Victim{Namespace: auth.Hidden, JobID: auth.Hidden}
		if canRead(v.Namespace) {
			gv = allotapi.Victim{Namespace: v.Namespace, JobID: v.JobID, Class: v.Class, LostWorkSeconds: v.LostWork.Seconds()}
			seen = true
		}
		d.Victims = append(d.Victims, gv)
	}
	return d, seen
}
