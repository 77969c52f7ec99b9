package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
)

// Report kinds served by API.Serve.
const (
	ReportUsage    = "usage"
	ReportCost     = "cost"
	ReportCapacity = "capacity"
	ReportAudit    = "audit"
)

// API answers /allot/v1/usage, /cost, /capacity and /audit. The server
// authenticates the caller and passes the namespaces it may read.
type API struct {
	DB    *DB
	Rates Rates
	Now   func() time.Time
}

// Caller is what API needs to know of the caller: the namespaces it may
// read (nil: all, a management token) and whether it may verify the chain.
type Caller struct {
	Namespaces []string
	Management bool
}

// UsageAnswer is the body of /allot/v1/usage.
type UsageAnswer struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	By    []string  `json:"by"`
	Rows  []Usage   `json:"rows"`
}

// CostAnswer is the body of /allot/v1/cost.
type CostAnswer struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	By    []string  `json:"by"`
	CostReport
}

// CapacityAnswer is the body of /allot/v1/capacity: most short first.
type CapacityAnswer struct {
	Since time.Time     `json:"since"`
	Until time.Time     `json:"until"`
	Pools []Utilization `json:"pools"`
}

// AuditAnswer is the body of /allot/v1/audit. Verified is set with
// ?verify=true (management tokens): the number of entries whose chain
// holds, or the error that breaks it.
type AuditAnswer struct {
	Entries     []Entry `json:"entries"`
	Verified    *int    `json:"verified,omitempty"`
	VerifyError string  `json:"verify_error,omitempty"`
}

// Serve answers one report for the caller.
func (a *API) Serve(kind string, w http.ResponseWriter, r *http.Request, c Caller) {
	q, err := a.query(r)
	if err != nil {
		allotapi.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	q.Namespaces = c.Namespaces
	ctx := r.Context()
	var out any
	switch kind {
	case ReportUsage:
		var rows []Usage
		rows, err = a.DB.Usage(ctx, q)
		out = UsageAnswer{Since: q.Since, Until: q.Until, By: q.By, Rows: rows}
	case ReportCost:
		var rep *CostReport
		if rep, err = a.DB.Cost(ctx, q, a.Rates); err == nil {
			out = CostAnswer{Since: q.Since, Until: q.Until, By: q.By, CostReport: *rep}
		}
	case ReportCapacity:
		var pools []Utilization
		pools, err = a.DB.Capacity(ctx, q.Since, q.Until)
		out = CapacityAnswer{Since: q.Since, Until: q.Until, Pools: pools}
	case ReportAudit:
		out, err = a.audit(ctx, r, q, c)
	default:
		err = fmt.Errorf("%w: unknown report %q", ErrBadQuery, kind)
	}
	switch {
	case errors.Is(err, ErrBadQuery):
		allotapi.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	case err != nil:
		allotapi.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "ledger: " + err.Error()})
	default:
		allotapi.WriteJSON(w, http.StatusOK, out)
	}
}

// audit answers /allot/v1/audit. Besides the window and kind it takes
// namespace (one namespace, within the caller's) and limit (the newest n
// entries, still oldest first).
func (a *API) audit(ctx context.Context, r *http.Request, q Query, c Caller) (AuditAnswer, error) {
	v := r.URL.Query()
	aq := AuditQuery{Since: q.Since, Until: q.Until, Namespaces: q.Namespaces, Kind: v.Get("kind")}
	if v.Get("since") == "" {
		aq.Since = time.Time{}
	}
	if ns := v.Get("namespace"); ns != "" {
		// A namespace the caller may not read matches nothing.
		aq.Namespaces = []string{}
		if q.Namespaces == nil || contains(q.Namespaces, ns) {
			aq.Namespaces = []string{ns}
		}
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return AuditAnswer{}, fmt.Errorf("%w: limit %q is not a positive number", ErrBadQuery, l)
		}
		aq.Limit, aq.Newest = n, true
	}
	es, err := a.DB.Entries(ctx, aq)
	if err != nil {
		return AuditAnswer{}, err
	}
	if !c.Management {
		// Decisions name other tenants' jobs (victims, preemptors):
		// their detail is for operators.
		for i := range es {
			if strings.HasPrefix(es[i].Kind, KindDecision) {
				es[i].Detail = "(redacted)"
			}
		}
	}
	out := AuditAnswer{Entries: es}
	if v := r.URL.Query().Get("verify"); v == "true" || v == "1" {
		if !c.Management {
			return out, fmt.Errorf("%w: verifying the chain needs a management token", ErrBadQuery)
		}
		n, err := a.DB.Verify(ctx)
		out.Verified = &n
		if err != nil {
			out.VerifyError = err.Error()
		}
	}
	return out, nil
}

// query reads since, until (RFC 3339 or Unix seconds) and by (comma list).
func (a *API) query(r *http.Request) (Query, error) {
	v := r.URL.Query()
	var q Query
	var err error
	if q.Since, err = parseTime(v.Get("since")); err != nil {
		return q, err
	}
	if q.Until, err = parseTime(v.Get("until")); err != nil {
		return q, err
	}
	if by := v.Get("by"); by != "" {
		q.By = strings.Split(by, ",")
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	return q, q.Check(now())
}

// parseTime reads an RFC 3339 time or Unix seconds. It refuses times
// outside years 0–9999: JSON (RFC 3339) cannot write them back.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		t, err = time.Unix(n, 0).UTC(), nil
	}
	if err != nil {
		return t, fmt.Errorf("%w: time %q is neither RFC 3339 nor Unix seconds", ErrBadQuery, s)
	}
	if y, yu := t.Year(), t.UTC().Year(); y < 0 || y > 9999 || yu < 0 || yu > 9999 {
		return t, fmt.Errorf("%w: time %q is outside years 0–9999", ErrBadQuery, s)
	}
	return t, nil
}
