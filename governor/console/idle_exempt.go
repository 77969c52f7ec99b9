package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/allotapi"
)

// errExemptForm is wrapped by every refusal of the exemption form.
var errExemptForm = errors.New("invalid input")

// exemptForm is the idle page's "grant an exemption" form.
type exemptForm struct {
	Namespace, Job, Until, Reason string
}

// meta checks the form as allotctl checks it (allotapi's exemption
// rule) and returns the meta key and value to write.
func (f exemptForm) meta(now time.Time) (string, string, error) {
	ns, job := strings.TrimSpace(f.Namespace), strings.TrimSpace(f.Job)
	if ns == "" || job == "" {
		return "", "", fmt.Errorf("%w: give a namespace and a job ID", errExemptForm)
	}
	until, err := allotapi.ExemptionExpiry(strings.TrimSpace(f.Until), now)
	if err != nil {
		return "", "", fmt.Errorf("%w: until: %w", errExemptForm, err)
	}
	reason, err := allotapi.ExemptionReason(f.Reason)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", errExemptForm, err)
	}
	return allotapi.ExemptKeyPrefix + job, allotapi.IdleExemption{Until: until, Reason: reason}.MetaValue(), nil
}

// idleExempt handles POST /ui/idle/exempt: the exemption is checked as
// allotctl checks it and written into the namespace's meta with the
// caller's token through the governor's proxy, so Nomad decides whether
// the token may (namespace meta needs a management token) and the ledger
// audits the change with the token as its actor.
func (c *Console) idleExempt(w http.ResponseWriter, q *Req) {
	if q.R.Method != http.MethodPost {
		http.Redirect(w, q.R, Prefix+"idle", http.StatusSeeOther)
		return
	}
	r := q.R
	f := exemptForm{Namespace: r.PostFormValue("namespace"), Job: r.PostFormValue("job"),
		Until: r.PostFormValue("until"), Reason: r.PostFormValue("reason")}
	key, val, err := f.meta(c.opts.Now())
	status := http.StatusBadRequest
	if err == nil {
		status, err = c.writeNamespaceMeta(q, strings.TrimSpace(f.Namespace), key, val)
	}
	if err != nil {
		c.showIdle(w, q, status, idleData{Form: f, Error: err.Error()})
		return
	}
	c.opts.Log.Info("console idle exemption", "namespace", f.Namespace, "job", f.Job, "accessor", q.Caller.AccessorID)
	http.Redirect(w, r, Prefix+"idle?exempted="+url.QueryEscape(strings.TrimSpace(f.Namespace)+"/"+strings.TrimSpace(f.Job)), http.StatusSeeOther)
}

// writeNamespaceMeta sets one meta key of ns through the proxy with the
// caller's token, keeping every other key as read just before. Nomad 1.6
// has no check-and-set for namespaces, so a change made between the read
// and the write is overwritten, as with allotctl. The status is the
// answer's on error.
func (c *Console) writeNamespaceMeta(q *Req, ns, key, val string) (int, error) {
	if c.opts.Nomad == nil {
		return http.StatusNotFound, errors.New("no Nomad proxy to write through")
	}
	path := "/v1/namespace/" + url.PathEscape(ns)
	var cur api.Namespace
	if err := c.nomad(q, path, &cur); err != nil {
		return statusOf(err), fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	cur.Meta = metaWith(cur.Meta, map[string]string{key: val})
	return c.postNamespace(q, path, &cur)
}
