//go:build e2e

package testcluster

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestE2E_ConsulDevAgent starts the dev agent, writes and reads a key, and
// checks it listens on loopback only and stops on Stop.
func TestE2E_ConsulDevAgent(t *testing.T) {
	c := StartConsul(t)
	must.StrHasPrefix(t, "127.0.0.1:", c.Addr())

	client := &http.Client{Timeout: 5 * time.Second}
	req, err := http.NewRequest(http.MethodPut, c.URL()+"/v1/kv/allot/probe", strings.NewReader("hello"))
	must.NoError(t, err)
	resp, err := client.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)

	resp, err = client.Get(c.URL() + "/v1/kv/allot/probe?raw")
	must.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.NoError(t, err)
	must.Eq(t, "hello", string(body))

	resp, err = client.Get(c.URL() + "/v1/agent/self")
	must.NoError(t, err)
	var self struct {
		Config      struct{ Version string }
		DebugConfig struct {
			DisableUpdateCheck bool
			BindAddr           string
			ClientAddrs        []string
		}
	}
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&self))
	resp.Body.Close()
	must.Eq(t, "1.15.4", self.Config.Version)
	must.True(t, self.DebugConfig.DisableUpdateCheck)
	must.Eq(t, "127.0.0.1", self.DebugConfig.BindAddr)
	must.Eq(t, []string{"127.0.0.1"}, self.DebugConfig.ClientAddrs)

	c.Stop()
	_, err = client.Get(c.URL() + "/v1/status/leader")
	must.Error(t, err)
}
