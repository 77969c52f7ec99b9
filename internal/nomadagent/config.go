package nomadagent

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DenyFingerprinters are the Nomad fingerprinters that probe the cloud
// metadata address 169.254.169.254. Every agent Allot starts disables them:
// only loopback traffic is allowed where Allot is developed and tested.
const DenyFingerprinters = "env_aws,env_gce,env_azure,env_digitalocean"

// Ports are the three listeners of a Nomad agent, all bound to 127.0.0.1.
type Ports struct {
	HTTP int
	RPC  int
	Serf int
}

// Config describes one Nomad agent. It renders to an agent HCL file that
// always carries the loopback safety settings.
type Config struct {
	// Name is the agent's node name; it is also the client's node name.
	Name       string
	DataDir    string
	PluginDir  string
	Datacenter string
	Ports      Ports
	LogLevel   string

	// Server enables the server; BootstrapExpect defaults to 1.
	Server bool
	// Client enables the client; Servers lists server RPC addresses.
	Client  bool
	Servers []string

	NodePool  string
	NodeClass string
	Meta      map[string]string
	// MaxKillTimeout is the client's max_kill_timeout (checkpointing needs
	// minutes, Nomad's default is 30s).
	MaxKillTimeout string
	// CgroupParent keeps several clients on one host out of each other's
	// cgroups.
	CgroupParent string

	// RawExec enables the raw_exec driver.
	RawExec bool
	// Plugins maps a plugin name (its binary in PluginDir) to the HCL body of
	// its config block.
	Plugins map[string]string
	// ChrootEnv is the client's chroot_env: host path → path in the chroot
	// Nomad builds for drivers with filesystem isolation. Empty means
	// Nomad's default (/bin, /etc, /lib, /usr, …, hard-linked per task).
	ChrootEnv map[string]string
	// Extra is appended verbatim to the agent config.
	Extra string
}

// HTTPAddr is the agent's HTTP API address, e.g. "http://127.0.0.1:4646".
func (c Config) HTTPAddr() string {
	return fmt.Sprintf("http://127.0.0.1:%d", c.Ports.HTTP)
}

// RPCAddr is the server RPC address clients join, e.g. "127.0.0.1:4647".
func (c Config) RPCAddr() string {
	return fmt.Sprintf("127.0.0.1:%d", c.Ports.RPC)
}

// Validate reports every problem with the config at once.
func (c Config) Validate() error {
	var errs []string
	if c.Name == "" {
		errs = append(errs, "name is empty")
	}
	if c.DataDir == "" {
		errs = append(errs, "data dir is empty")
	}
	if !c.Server && !c.Client {
		errs = append(errs, "neither server nor client is enabled")
	}
	if c.Client && !c.Server && len(c.Servers) == 0 {
		errs = append(errs, "client has no servers to join")
	}
	for _, p := range []int{c.Ports.HTTP, c.Ports.RPC, c.Ports.Serf} {
		if p <= 0 || p > 65535 {
			errs = append(errs, fmt.Sprintf("port %d out of range", p))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid agent config %q: %s", c.Name, strings.Join(errs, "; "))
	}
	return nil
}

// Render returns the agent configuration as HCL.
func (c Config) Render() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("name                 = %s\n", q(c.Name))
	w("datacenter           = %s\n", q(or(c.Datacenter, "dc1")))
	w("data_dir             = %s\n", q(c.DataDir))
	w("log_level            = %s\n", q(or(c.LogLevel, "DEBUG")))
	w("bind_addr            = \"127.0.0.1\"\n")
	w("disable_update_check = true\n")
	if c.PluginDir != "" {
		w("plugin_dir           = %s\n", q(c.PluginDir))
	}
	w("\nports {\n  http = %d\n  rpc  = %d\n  serf = %d\n}\n", c.Ports.HTTP, c.Ports.RPC, c.Ports.Serf)
	w("\nadvertise {\n  http = \"127.0.0.1\"\n  rpc  = \"127.0.0.1\"\n  serf = \"127.0.0.1\"\n}\n")
	// No Consul or Vault: the agent must not go looking for them.
	w("\nconsul {\n  auto_advertise   = false\n  server_auto_join = false\n  client_auto_join = false\n}\n")
	if c.Server {
		w("\nserver {\n  enabled          = true\n  bootstrap_expect = 1\n}\n")
	}
	if c.Client {
		c.renderClient(&b)
	}
	if c.RawExec {
		w("\nplugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n")
	}
	for _, name := range sortedKeys(c.Plugins) {
		w("\nplugin %s {\n  config {\n%s\n  }\n}\n", q(name), indent(c.Plugins[name], "    "))
	}
	if c.Extra != "" {
		w("\n%s\n", c.Extra)
	}
	return b.String()
}

func (c Config) renderClient(b *strings.Builder) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("\nclient {\n  enabled           = true\n")
	w("  network_interface = \"lo\"\n")
	if len(c.Servers) > 0 {
		quoted := make([]string, len(c.Servers))
		for i, s := range c.Servers {
			quoted[i] = q(s)
		}
		w("  servers           = [%s]\n", strings.Join(quoted, ", "))
	}
	if c.NodePool != "" {
		w("  node_pool         = %s\n", q(c.NodePool))
	}
	if c.NodeClass != "" {
		w("  node_class        = %s\n", q(c.NodeClass))
	}
	if c.MaxKillTimeout != "" {
		w("  max_kill_timeout  = %s\n", q(c.MaxKillTimeout))
	}
	if c.CgroupParent != "" {
		w("  cgroup_parent     = %s\n", q(c.CgroupParent))
	}
	w("  options = {\n    \"fingerprint.denylist\" = %s\n  }\n", q(DenyFingerprinters))
	if len(c.ChrootEnv) > 0 {
		w("  chroot_env {\n")
		for _, k := range sortedKeys(c.ChrootEnv) {
			w("    %s = %s\n", q(k), q(c.ChrootEnv[k]))
		}
		w("  }\n")
	}
	if len(c.Meta) > 0 {
		w("  meta = {\n")
		for _, k := range sortedKeys(c.Meta) {
			w("    %s = %s\n", q(k), q(c.Meta[k]))
		}
		w("  }\n")
	}
	w("}\n")
}

func q(s string) string { return strconv.Quote(s) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
