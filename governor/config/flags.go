package config

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// Load builds the configuration of allot-governor from defaults, the file
// named by -config and the other flags (flags win over the file), reading
// NOMAD_ADDR and NOMAD_TOKEN from env as defaults for the Nomad flags.
// The result is validated.
func Load(args []string, env func(string) string, stderr io.Writer) (Config, error) {
	if env == nil {
		env = os.Getenv
	}
	fs := flag.NewFlagSet("allot-governor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		file   = fs.String("config", "", "path of an HCL config file")
		addr   = fs.String("nomad-addr", "", "Nomad HTTP address (default $NOMAD_ADDR or http://127.0.0.1:4646)")
		token  = fs.String("nomad-token", "", "the governor's own Nomad ACL token (default $NOMAD_TOKEN)")
		listen = fs.String("listen", "", "listen address of the proxy and API (default "+DefaultListen+")")
		level  = fs.String("log-level", "", "log level: trace, debug, info, warn, error")
		data   = fs.String("data-dir", "", "the governor's data directory (the ledger defaults to SQLite at <data-dir>/ledger.db)")
		ha     = haFlags(fs)
	)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c := Default()
	setEnv(&c.Nomad.Address, env("NOMAD_ADDR"))
	setEnv(&c.Nomad.Token, env("NOMAD_TOKEN"))
	if *file != "" {
		if err := c.LoadFile(*file); err != nil {
			return Config{}, err
		}
	}
	setEnv(&c.Nomad.Address, *addr)
	setEnv(&c.Nomad.Token, *token)
	setEnv(&c.Listen, *listen)
	setEnv(&c.LogLevel, *level)
	setEnv(&c.DataDir, *data)
	ha.apply(&c, env)
	c.resolveLedger()
	c.resolveHA(osHostname)
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

func setEnv(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// haFlagSet holds the HA flags: -ha-consul-addr turns HA on (as an ha
// block does); -ha-member-id and -ha-advertise override the block.
type haFlagSet struct{ consul, member, advertise *string }

func haFlags(fs *flag.FlagSet) haFlagSet {
	return haFlagSet{
		consul:    fs.String("ha-consul-addr", "", "Consul HTTP address; turns high availability on (docs/ha.md)"),
		member:    fs.String("ha-member-id", "", "this governor's id among the HA members (default <hostname>-<port>)"),
		advertise: fs.String("ha-advertise", "", "URL other governors forward admissions to when this one leads (default http://<listen>)"),
	}
}

// apply applies the flags over c; with HA on, $CONSUL_HTTP_TOKEN is the
// default Consul token.
func (h haFlagSet) apply(c *Config, env func(string) string) {
	if *h.consul != "" {
		c.HA.Enabled = true
		c.HA.Consul.Address = *h.consul
	}
	setEnv(&c.HA.MemberID, *h.member)
	setEnv(&c.HA.Advertise, *h.advertise)
	if c.HA.Enabled && c.HA.Consul.Token == "" {
		c.HA.Consul.Token = env("CONSUL_HTTP_TOKEN")
	}
}
