//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/internal/testcluster"
)

// newACLSubmitEnv is newSubmitEnv on a cluster with ACLs on: the governor
// runs with its own management token, and every path submits with one
// client token holding terraform/modules/tenant's policy for both
// namespaces, so Nomad resolves the same token on every path.
func newACLSubmitEnv(b *testing.B) *submitEnv {
	c := testcluster.New(b, testcluster.Options{ACL: true, Clients: []testcluster.ClientSpec{{Name: "c1"}}})
	if _, err := c.API.NodePools().Register(&api.NodePool{Name: "nowhere"}, nil); err != nil {
		b.Fatal(err)
	}
	var policies []string
	for _, ns := range []string{"plain", "governed"} {
		meta := map[string]string{}
		if ns == "governed" {
			meta["allot.quota.cpu"] = "1000000"
		}
		if _, err := c.API.Namespaces().Register(&api.Namespace{Name: ns, Meta: meta}, nil); err != nil {
			b.Fatal(err)
		}
		name, rules, err := testcluster.TenantPolicy(ns)
		if err != nil {
			b.Fatal(err)
		}
		c.CreatePolicy(name, rules)
		policies = append(policies, name)
	}
	token := c.CreateToken("bench-tenant", policies...).SecretID
	cfgFile := filepath.Join(b.TempDir(), "governor.hcl")
	if err := os.WriteFile(cfgFile, []byte("enable_debug = true\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	g := c.StartGovernor("-config", cfgFile, "-nomad-token", c.ManagementToken())
	withToken := func(addr string) *api.Client {
		cl := apiClient(b, addr)
		cl.SetSecretID(token)
		return cl
	}
	e := &submitEnv{c: c, g: g, govPID: g.PID(), srvPID: c.Server.PID(),
		direct: &submitPath{name: "direct", ns: "plain", client: withToken(c.Addr())},
		proxy:  &submitPath{name: "proxy", ns: "governed", client: withToken(g.Addr)},
		pass:   &submitPath{name: "pass", ns: "plain", client: withToken(g.Addr)}}
	for i := 0; i < 2; i++ {
		for _, p := range e.paths() {
			e.chunk(b, p, submitChunk)
		}
	}
	return e
}

// BenchmarkE2E_SubmitACL is BenchmarkE2E_Submit with Nomad's ACLs on and a
// tenant token on every path: the governor authenticates the caller
// (governor/auth, cached for auth.DefaultTTL) before admission. Run it
// with -benchtime 1000x -count 5 and take the median of proxy/direct-%.
func BenchmarkE2E_SubmitACL(b *testing.B) {
	if b.N == 1 {
		return // the sizing call; see BenchmarkE2E_Submit
	}
	e := newACLSubmitEnv(b)
	b.ResetTimer()
	e.run(b, b.N)
	for _, p := range e.paths() {
		p.report(b)
	}
	b.ReportMetric(100*e.proxy.rate()/e.direct.rate(), "proxy/direct-%")
	b.ReportMetric(100*e.pass.rate()/e.direct.rate(), "pass/direct-%")
}

// BenchmarkE2E_AuthLatency measures what authentication adds to a request
// through the governor with ACLs on: governor/auth resolving a client
// token that holds terraform/modules/tenant's policy, against a real
// Nomad 1.6.1, uncached (a token seen for the first time: token self plus
// one policy read) and cached. One op is one fresh token resolved twice.
func BenchmarkE2E_AuthLatency(b *testing.B) {
	if b.N == 1 {
		return
	}
	c := testcluster.New(b, testcluster.Options{ACL: true, Clients: []testcluster.ClientSpec{{Name: "c1"}}})
	name, rules, err := testcluster.TenantPolicy("ml")
	if err != nil {
		b.Fatal(err)
	}
	c.CreatePolicy(name, rules)
	secrets := make([]string, b.N)
	for i := range secrets {
		secrets[i] = c.CreateToken(fmt.Sprintf("bench-%d", i), name).SecretID
	}
	u, _ := url.Parse(c.Addr())
	a := auth.New(auth.Options{Nomad: u, Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}},
		MaxEntries: b.N + 1, TTL: time.Hour})
	if _, err := a.Resolve(""); err != nil { // warm the connection
		b.Fatal(err)
	}
	uncached, cached := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for _, s := range secrets {
		for _, into := range []*[]time.Duration{&uncached, &cached} {
			start := time.Now()
			caller, err := a.Resolve(s)
			*into = append(*into, time.Since(start))
			if err != nil || !caller.CanRead("ml") {
				b.Fatalf("resolving a tenant token: %v", err)
			}
		}
	}
	b.StopTimer()
	for label, ds := range map[string][]time.Duration{"uncached": uncached, "cached": cached} {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, label+"-p50-us")
		b.ReportMetric(float64(ds[(len(ds)*99)/100].Nanoseconds())/1e3, label+"-p99-us")
	}
}
