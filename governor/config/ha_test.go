package config

import (
	"io"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestHABlock(t *testing.T) {
	p := writeFile(t, `
listen = "127.0.0.1:4690"
ha {
  consul {
    address = "https://consul.internal:8501"
    token   = "c-token"
    ca_cert = "/etc/consul/ca.pem"
  }
  lock_key    = "allot/prod/leader"
  session_ttl = "10s"
  lock_delay  = "2s"
  check_ttl   = "3s"
  member_id   = "gov-a"
}`)
	c, err := Load([]string{"-config", p}, noEnv, io.Discard)
	must.NoError(t, err)
	h := c.HA
	must.True(t, h.Enabled)
	must.Eq(t, "https://consul.internal:8501", h.Consul.Address)
	must.Eq(t, "c-token", h.Consul.Token)
	must.Eq(t, "/etc/consul/ca.pem", h.Consul.CACert)
	must.Eq(t, "allot/prod/leader", h.LockKey)
	must.Eq(t, 10*time.Second, h.SessionTTL)
	must.Eq(t, 2*time.Second, h.LockDelay)
	must.Eq(t, 3*time.Second, h.CheckTTL)
	must.Eq(t, 3*time.Second, h.LeaseTTL())
	must.Eq(t, "gov-a", h.MemberID)
	must.Eq(t, "http://127.0.0.1:4690", h.Advertise, must.Sprint("advertise defaults to the listen address"))
}

func TestHADisabledByDefault(t *testing.T) {
	c, err := Load(nil, noEnv, io.Discard)
	must.NoError(t, err)
	must.False(t, c.HA.Enabled)
}

func TestHAFlags(t *testing.T) {
	env := func(k string) string { return map[string]string{"CONSUL_HTTP_TOKEN": "from-env"}[k] }
	c, err := Load([]string{"-listen", "127.0.0.1:4700", "-ha-consul-addr", "http://127.0.0.1:8500",
		"-ha-member-id", "b", "-ha-advertise", "http://gov-b:4700"}, env, io.Discard)
	must.NoError(t, err)
	must.True(t, c.HA.Enabled)
	must.Eq(t, "http://127.0.0.1:8500", c.HA.Consul.Address)
	must.Eq(t, "from-env", c.HA.Consul.Token)
	must.Eq(t, "b", c.HA.MemberID)
	must.Eq(t, "http://gov-b:4700", c.HA.Advertise)
	must.Eq(t, DefaultSessionTTL, c.HA.SessionTTL)
	must.Eq(t, DefaultLockDelay, c.HA.LockDelay)
	must.Eq(t, DefaultLockKey, c.HA.LockKey)
}

func TestHAMemberIDDefault(t *testing.T) {
	c := Default()
	c.HA.Enabled = true
	c.resolveHA(func() (string, error) { return "node7", nil })
	must.Eq(t, "node7-4680", c.HA.MemberID)
	must.Eq(t, "http://127.0.0.1:4680", c.HA.Advertise)
}

func TestHAErrors(t *testing.T) {
	cases := map[string]struct {
		file string
		args []string
		want []string
	}{
		"sqlite ledger cannot be shared": {
			file: `ha {}
data_dir = "/var/lib/allot"`,
			want: []string{"SQLite file (/var/lib/allot/ledger.db), which several governors cannot share", "PostgreSQL"},
		},
		"bad durations": {
			file: `ha {
  session_ttl = "5s"
  lock_delay  = "2m"
  check_ttl   = "500ms"
}`,
			want: []string{"ha session_ttl 5s: Consul takes 10s to 24h", "ha lock_delay 2m0s: must be above 0 and at most 60s", "ha check_ttl 500ms"},
		},
		"check above session ttl": {
			file: `ha {
  check_ttl = "20s"
}`,
			want: []string{"ha check_ttl 20s: must be 0 (no check) or between 1s and session_ttl 15s"},
		},
		"unparsable duration": {
			file: `ha {
  session_ttl = "soon"
}`,
			want: []string{"ha session_ttl"},
		},
		"wildcard listen needs advertise": {
			file: `listen = "0.0.0.0:4680"
ha {
  consul { address = "consul:8500" }
}`,
			want: []string{"ha advertise: required", `ha consul address "consul:8500": must be an http(s) URL`},
		},
		"postgres ledger is fine": {
			file: `ha {}
ledger {
  driver = "postgres"
  dsn    = "postgres://allot@db/allot"
}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, tc.file)
			_, err := Load(append([]string{"-config", p}, tc.args...), noEnv, io.Discard)
			if len(tc.want) == 0 {
				must.NoError(t, err)
				return
			}
			for _, w := range tc.want {
				must.ErrorContains(t, err, w)
			}
		})
	}
}
