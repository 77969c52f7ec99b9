package nomadagent

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl"
	"github.com/shoenig/test/must"
)

// clientConfig is a builder for client agent configs in tests.
func clientConfig(mods ...func(*Config)) Config {
	c := Config{
		Name: "c1", DataDir: "/tmp/x/data", Client: true,
		Servers: []string{"127.0.0.1:4647"},
		Ports:   Ports{HTTP: 5000, RPC: 5001, Serf: 5002},
	}
	for _, m := range mods {
		m(&c)
	}
	return c
}

func TestRender_AlwaysCarriesSafetySettings(t *testing.T) {
	cases := map[string]Config{
		"client": clientConfig(),
		"server": {Name: "s", DataDir: "/d", Server: true, Ports: Ports{HTTP: 1, RPC: 2, Serf: 3}},
		"both": clientConfig(func(c *Config) {
			c.Server, c.Servers = true, nil
		}),
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			out := cfg.Render()
			must.StrContains(t, out, `bind_addr            = "127.0.0.1"`)
			must.StrContains(t, out, `disable_update_check = true`)
			must.StrContains(t, out, "advertise {\n  http = \"127.0.0.1\"")
			if cfg.Client {
				must.StrContains(t, out, `"fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"`)
			}
		})
	}
}

func TestRender_IsValidHCLWithEverySetting(t *testing.T) {
	cfg := clientConfig(func(c *Config) {
		c.NodePool, c.NodeClass = "gpu", "accel"
		c.Meta = map[string]string{"rack": "r1", "allot.zone": `a"b`}
		c.MaxKillTimeout, c.CgroupParent = "10m", "/allot-x"
		c.RawExec = true
		c.Plugins = map[string]string{"nomad-device-accel": "inventory_file = \"/x.hcl\"\nfingerprint_period = \"1s\""}
	})
	var parsed map[string]any
	must.NoError(t, hcl.Decode(&parsed, cfg.Render()))
	out := cfg.Render()
	for _, want := range []string{
		`node_pool         = "gpu"`, `max_kill_timeout  = "10m"`, `cgroup_parent     = "/allot-x"`,
		`"allot.zone" = "a\"b"`, `plugin "nomad-device-accel"`, `    fingerprint_period = "1s"`,
		`plugin "raw_exec"`,
	} {
		must.StrContains(t, out, want)
	}
}

func TestValidate_ReportsEveryProblem(t *testing.T) {
	err := Config{Client: true, Ports: Ports{HTTP: 0, RPC: 70000, Serf: 1}}.Validate()
	must.Error(t, err)
	for _, want := range []string{"name is empty", "data dir is empty", "no servers", "port 0", "port 70000"} {
		must.StrContains(t, err.Error(), want)
	}
	must.NoError(t, clientConfig().Validate())
}

func TestFreePorts_Distinct(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 5; i++ {
		ports, err := FreePorts(3)
		must.NoError(t, err)
		for _, p := range ports {
			must.False(t, seen[p], must.Sprintf("port %d handed out twice", p))
			seen[p] = true
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	must.Eq(t, "/tmp/a b", unescapeMount(`/tmp/a\040b`))
	must.Eq(t, "/plain", unescapeMount("/plain"))
	must.Eq(t, `/odd\`, unescapeMount(`/odd\`))
}

func TestCgroupParentIsUniquePerID(t *testing.T) {
	a, b := CgroupParent("x-1"), CgroupParent("x-2")
	must.NotEq(t, a, b)
	must.True(t, strings.Contains(a, "x-1"))
}
