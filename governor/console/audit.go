package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/ledger"
)

// auditShown bounds the entries one audit page lists (newest first).
const auditShown = 200

// auditKinds are the kind filter's choices: a prefix of the entry kind
// (idle: is governor/idle's KindPrefix; job- covers job-requeue and
// job-release, the requeues and releases people made).
var auditKinds = []string{"", ledger.KindNamespaceMeta, ledger.KindDecision, "idle:", "job-"}

// auditDetailShown is how much of a long detail the table shows before
// the rest is folded away.
const auditDetailShown = 90

// auditRow is one entry as the table shows it: the keys that changed with
// their old and new values, and the detail shortened when long.
type auditRow struct {
	ledger.Entry
	Changes []metaChange
	Short   string // the detail's start when it is folded, "" otherwise
}

// metaChange is one namespace meta key's change ("" = absent).
type metaChange struct{ Key, Old, New string }

// auditData is the audit page.
type auditData struct {
	Window  window
	Windows []choice
	Tenant  string
	Tenants []string
	Kind    string
	Kinds   []choice
	Entries []auditRow
	// More is set when the window holds more matching entries than
	// auditShown.
	More bool
	// Shown is auditShown, for the page.
	Shown int
	// Verified is the chain check's result, for management tokens that
	// asked for it (?verify=1).
	Verified    bool
	VerifiedN   int
	VerifyError string
	CanVerify   bool
	VerifyURL   string
	Note        string
}

// auditView serves /ui/audit: quota and class changes with their actor,
// and the governor's decisions, filtered by tenant, kind and window;
// newest first.
func (c *Console) auditView(w http.ResponseWriter, q *Req) {
	v := q.R.URL.Query()
	win := c.readWindow(q.R)
	d := auditData{Window: win, Tenant: v.Get("tenant"), Kind: v.Get("kind"),
		CanVerify: q.Caller != nil && q.Caller.Management()}
	if !contains(auditKinds, d.Kind) {
		d.Kind = ""
	}
	for _, o := range reportWindows {
		d.Windows = append(d.Windows, choice{o.Code, q.L.T("window." + o.Code), o.Code == win.Code})
	}
	for _, k := range auditKinds {
		d.Kinds = append(d.Kinds, choice{k, q.L.T("audit.kind." + auditKindKey(k)), k == d.Kind})
	}
	var ts allotapi.TenantList
	if err := c.api(q, "/allot/v1/tenants", &ts); err == nil {
		for _, t := range ts.Tenants {
			d.Tenants = append(d.Tenants, t.Namespace)
		}
		sort.Strings(d.Tenants)
	}
	// The API filters (tenant, kind) and keeps the newest auditShown+1
	// entries: one more tells whether the window holds more.
	p := win.params()
	if d.Kind != "" {
		p.Set("kind", d.Kind)
	}
	if d.Tenant != "" {
		p.Set("namespace", d.Tenant)
	}
	p.Set("limit", strconv.Itoa(auditShown+1))
	self := url.Values{"window": {win.Code}, "tenant": {d.Tenant}, "kind": {d.Kind}, "verify": {"1"}}
	d.VerifyURL = Prefix + "audit?" + self.Encode()
	if d.CanVerify && (v.Get("verify") == "1") {
		p.Set("verify", "true")
	}
	var aa ledger.AuditAnswer
	if err := c.api(q, "/allot/v1/audit?"+p.Encode(), &aa); err != nil {
		c.ledgerFail(w, q, err, "audit", "audit.title", &d.Note, d)
		return
	}
	if aa.Verified != nil {
		d.Verified, d.VerifiedN, d.VerifyError = true, *aa.Verified, aa.VerifyError
	}
	es := newestFirst(aa.Entries)
	d.Shown, d.More = auditShown, len(es) > auditShown
	if d.More {
		es = es[:auditShown]
	}
	for _, e := range es {
		d.Entries = append(d.Entries, auditRowOf(e))
	}
	c.render(w, q, http.StatusOK, "audit", "audit.title", "", d)
}

// newestFirst reverses the API's oldest-first entries.
func newestFirst(es []ledger.Entry) []ledger.Entry {
	out := make([]ledger.Entry, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		out = append(out, es[i])
	}
	return out
}

// auditRowOf lists the changed keys of a meta entry (its Subject) with
// their values, and folds a long detail.
func auditRowOf(e ledger.Entry) auditRow {
	r := auditRow{Entry: e}
	if e.Kind == ledger.KindNamespaceMeta && e.Subject != "" {
		old, next := metaLines(e.Old), metaLines(e.New)
		for _, k := range strings.Split(e.Subject, ",") {
			r.Changes = append(r.Changes, metaChange{Key: k, Old: old[k], New: next[k]})
		}
	}
	if d := []rune(e.Detail); len(d) > auditDetailShown {
		r.Short = string(d[:auditDetailShown]) + "…"
	}
	return r
}

// metaLines reads the ledger's canonical meta (key="quoted value" lines).
func metaLines(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out[k] = v
	}
	return out
}

// auditKindKey is the catalogue suffix of a kind filter.
func auditKindKey(kind string) string {
	switch kind {
	case ledger.KindNamespaceMeta:
		return "meta"
	case ledger.KindDecision:
		return "decision"
	case "idle:":
		return "idle"
	case "job-":
		return "job"
	}
	return "all"
}
