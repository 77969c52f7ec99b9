package proxy

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// redactingAuth is fakeAuth that also hides a word in texts answered to
// the caller, as NomadACL hides namespaces the token may not read.
type redactingAuth struct {
	*fakeAuth
	hide string
}

func (a redactingAuth) Redactor(secret string, _ []string) func(string) string {
	return func(s string) string { return strings.ReplaceAll(s, a.hide, "(hidden)") }
}

// The engine's reasons may name another tenant's job ("waiting behind
// ns/id"): every reason the proxy answers, in a held job's warning and in
// a 409, goes through the caller's redactor (audit #27, proxy side).
func TestAudit27_ProxyReasonsAreRedactedForTheCaller(t *testing.T) {
	f := newFixture(t, true)
	f.proxy.auth = redactingAuth{fakeAuth: f.auth, hide: "uses 2 of limit 4"}

	status, out := put(t, f.srv.URL+"/v1/job/big", registerBody("ml", "big", 4))
	must.Eq(t, 200, status)
	w := out["Warnings"].(string)
	must.StrContains(t, w, "reason: limit: needs 4 gpu; tenant ml (hidden)")
	must.StrNotContains(t, w, "uses 2 of limit 4")

	f.stored(t, paramJob(4))
	status, out = put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{"Meta":{}}`)
	must.Eq(t, 409, status)
	must.StrContains(t, out["raw"].(string), "tenant ml (hidden)")
	must.StrNotContains(t, out["raw"].(string), "uses 2 of limit 4")
}
