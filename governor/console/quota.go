package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/allotapi"
	gq "github.com/allot-sh/allot/governor/quota"
)

// quotaForm is the tenant page's quota form: one resource, and any of
// its quota, limit and lend (empty: unchanged).
type quotaForm struct {
	Resource, Quota, Limit, Lend string
}

// errQuotaForm is wrapped by every refusal of the form's input.
var errQuotaForm = errors.New("invalid input")

// edits checks the form with the rule `allotctl quota set` checks its
// pairs with (governor/quota.CheckAmount) and returns the meta keys to
// set.
func (f quotaForm) edits() (map[string]string, error) {
	res := strings.TrimSpace(f.Resource)
	if err := gq.CheckResource(res); err != nil {
		return nil, fmt.Errorf("%w: %w", errQuotaForm, err)
	}
	out := map[string]string{}
	for prefix, v := range map[string]string{gq.PrefixQuota: f.Quota, gq.PrefixLimit: f.Limit, gq.PrefixLend: f.Lend} {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		key, err := gq.CheckAmount(prefix, res, v)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errQuotaForm, err)
		}
		out[key] = v
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: give a quota, a limit or a lend amount", errQuotaForm)
	}
	return out, nil
}

// setQuota handles POST /ui/tenants/<ns>/quota: the new meta is checked
// whole with the governor's quota parser, then written with the caller's
// token through the governor's proxy, so Nomad decides whether the token
// may write the namespace and the ledger audits the change with the
// token as its actor.
func (c *Console) setQuota(w http.ResponseWriter, q *Req, ns string) {
	r := q.R
	f := quotaForm{Resource: r.PostFormValue("resource"), Quota: r.PostFormValue("quota"),
		Limit: r.PostFormValue("limit"), Lend: r.PostFormValue("lend")}
	status, err := c.writeQuota(q, ns, f)
	if err != nil {
		c.showTenant(w, q, ns, status, tenantData{Error: err.Error(), Form: f})
		return
	}
	c.opts.Log.Info("console quota change", "namespace", ns, "accessor", q.Caller.AccessorID, "resource", f.Resource)
	http.Redirect(w, r, tenantURL(ns)+"?saved="+url.QueryEscape(strings.TrimSpace(f.Resource)), http.StatusSeeOther)
}

// writeQuota validates and writes; the status is the answer's on error.
func (c *Console) writeQuota(q *Req, ns string, f quotaForm) (int, error) {
	if c.opts.Nomad == nil {
		return http.StatusNotFound, errors.New("no Nomad proxy to write through")
	}
	set, err := f.edits()
	if err != nil {
		return http.StatusBadRequest, err
	}
	var cl allotapi.ClassList
	if err := c.api(q, "/allot/v1/classes", &cl); err != nil {
		return statusOf(err), err
	}
	classes := map[string]bool{}
	for _, k := range cl.Classes {
		classes[k.Name] = true
	}
	path := "/v1/namespace/" + url.PathEscape(ns)
	var cur api.Namespace
	if err := c.nomad(q, path, &cur); err != nil {
		return statusOf(err), fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	next := metaWith(cur.Meta, set)
	if _, err := gq.Parse(ns, next, classes); err != nil {
		return http.StatusBadRequest, fmt.Errorf("not written: %w", err)
	}
	// Nomad 1.6 has no check-and-set for namespaces: re-read right before
	// writing and refuse when someone changed it meanwhile (as allotctl).
	var again api.Namespace
	if err := c.nomad(q, path, &again); err != nil {
		return statusOf(err), fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	if again.ModifyIndex != cur.ModifyIndex {
		return http.StatusConflict, fmt.Errorf("namespace %q changed while being updated; nothing written, try again", ns)
	}
	again.Meta = next
	return c.postNamespace(q, path, &again)
}

// postNamespace writes ns through the proxy with the caller's token
// (POST path); the status is the answer's on error.
func (c *Console) postNamespace(q *Req, path string, ns *api.Namespace) (int, error) {
	body, err := json.Marshal(ns)
	if err != nil {
		return http.StatusInternalServerError, fmt.Errorf("encoding namespace: %w", err)
	}
	rec, err := c.call(q.R.Context(), q, c.opts.Nomad, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if rec.status/100 != 2 {
		return rec.status, fmt.Errorf("Nomad refused the change (%d): %s", rec.status, strings.TrimSpace(rec.body.String()))
	}
	return http.StatusOK, nil
}

// metaWith returns a copy of meta (never nil) with the keys of set set.
func metaWith(meta, set map[string]string) map[string]string {
	next := maps.Clone(meta)
	if next == nil {
		next = map[string]string{}
	}
	maps.Copy(next, set)
	return next
}

// statusOf is the HTTP status an error of api or nomad carries.
func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return http.StatusInternalServerError
}
