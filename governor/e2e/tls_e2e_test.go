//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

const tlsJobHCL = `
job "over-tls" {
  namespace = "team-a"
  type      = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// TestE2E_ACLOverTLS runs the governor with a TLS listener that requires
// client certificates, in front of a Nomad with ACLs (audit #13): the
// nomad CLI with a client certificate and a tenant token submits through
// it; without a certificate, with one from another CA, or over plain HTTP
// nothing gets through; a certificate alone is not a token.
func TestE2E_ACLOverTLS(t *testing.T) {
	start := time.Now()
	c := testcluster.New(t, testcluster.Options{ACL: true, Clients: []testcluster.ClientSpec{{Name: "c1"}}})
	_, err := c.API.Namespaces().Register(&api.Namespace{Name: "team-a", Meta: map[string]string{"allot.quota.cpu": "1000"}}, nil)
	must.NoError(t, err)
	tenant := c.TenantToken("team-a")
	g, gt := c.StartGovernorTLS("cycle_interval = \"1s\"\n", "-nomad-token", c.ManagementToken())
	t.Logf("cluster with ACLs and TLS governor up in %s", time.Since(start).Round(time.Millisecond))
	aliceCert, aliceKey := gt.CA.Issue("alice", true)
	stranger := testcluster.NewCA(t)
	malCert, malKey := stranger.Issue("mallory", true)
	job := filepath.Join(t.TempDir(), "over-tls.nomad.hcl")
	must.NoError(t, os.WriteFile(job, []byte(tlsJobHCL), 0o644))
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	run := func(env ...string) (string, error) {
		cmd := exec.Command(nomad, "job", "run", "-detach", job)
		cmd.Env = append(os.Environ(), append([]string{"NOMAD_ADDR=" + g.Addr, "NOMAD_CACERT=" + gt.CA.CertFile,
			"NOMAD_TOKEN=" + tenant, "NOMAD_NAMESPACE=", "NOMAD_CLIENT_CERT=", "NOMAD_CLIENT_KEY="}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("no client certificate", func(t *testing.T) {
		// With TLS 1.3 the server refuses the missing certificate after the
		// client's side of the handshake, so the CLI reports either the
		// TLS alert or a broken connection: only the failure is checked.
		out, err := run()
		must.Error(t, err, must.Sprint(out))
		must.StrContains(t, strings.ToLower(out), "error submitting job")
	})
	t.Run("a certificate from another CA", func(t *testing.T) {
		out, err := run("NOMAD_CLIENT_CERT="+malCert, "NOMAD_CLIENT_KEY="+malKey)
		must.Error(t, err, must.Sprint(out))
	})
	t.Run("plain HTTP", func(t *testing.T) {
		resp, err := http.Get("http" + strings.TrimPrefix(g.Addr, "https") + "/allot/v1/queue")
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode)
	})
	_, _, err = c.API.Jobs().Info("over-tls", &api.QueryOptions{Namespace: "team-a"})
	must.Error(t, err, must.Sprint("nothing was registered without a valid client certificate"))

	t.Run("client certificate and tenant token", func(t *testing.T) {
		out, err := run("NOMAD_CLIENT_CERT="+aliceCert, "NOMAD_CLIENT_KEY="+aliceKey)
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "admitted")
		c.WaitForAlloc("team-a", "over-tls", time.Minute, testcluster.ClientStatus(api.AllocClientStatusRunning))
	})
	t.Run("a certificate is not a token", func(t *testing.T) {
		client, err := gt.Client(aliceCert, aliceKey)
		must.NoError(t, err)
		resp, err := client.Get(g.Addr + "/allot/v1/queue")
		must.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, http.StatusForbidden, resp.StatusCode, must.Sprint(string(body)))
		req, _ := http.NewRequest(http.MethodGet, g.Addr+"/allot/v1/tenants", nil)
		req.Header.Set("X-Nomad-Token", tenant)
		resp, err = client.Do(req)
		must.NoError(t, err)
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode)
		must.StrContains(t, string(body), "team-a")
	})
	t.Logf("TestE2E_ACLOverTLS took %s", time.Since(start).Round(time.Millisecond))
}
