// Package cmdutil holds what allotctl's commands share: the connection
// flags (honouring NOMAD_ADDR, ALLOT_ADDR, NOMAD_TOKEN, NOMAD_NAMESPACE),
// the Nomad and governor clients, Nomad-style tables and key/value lists,
// JSON output, and usage errors with their exit code.
package cmdutil

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/nomad/api"
	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/config"
)

// Flag names shared by the commands.
const (
	FlagAddress      = "address"
	FlagAllotAddress = "allot-address"
	FlagToken        = "token"
	FlagNamespace    = "namespace"
	FlagJSON         = "json"
	FlagConfig       = "governor-config"
)

// DefaultAddress is Nomad's default HTTP address.
const DefaultAddress = "http://127.0.0.1:4646"

// ConnFlags are the connection flags of every command that talks to Nomad
// or the governor. NOMAD_ADDR may point at the governor (its /v1 proxy);
// ALLOT_ADDR, when set, is where the /allot/v1 API is, else NOMAD_ADDR.
func ConnFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: FlagAddress, EnvVars: []string{envOf[FlagAddress]}, Value: DefaultAddress,
			Usage: "Nomad (or governor proxy) HTTP address"},
		&cli.StringFlag{Name: FlagAllotAddress, EnvVars: []string{envOf[FlagAllotAddress]},
			Usage: "governor address for the /allot/v1 API (default: -address)"},
		&cli.StringFlag{Name: FlagToken, EnvVars: []string{envOf[FlagToken]}, Usage: "Nomad ACL token"},
		&cli.StringFlag{Name: FlagNamespace, EnvVars: []string{envOf[FlagNamespace]}, Usage: "Nomad namespace"},
	}
}

// ReadFlags are ConnFlags plus -json, for read commands.
func ReadFlags() []cli.Flag {
	return append(ConnFlags(), &cli.BoolFlag{Name: FlagJSON, Usage: "print JSON instead of a table"})
}

// ConfigFlag names the governor's config file, whose class table decides
// which classes a quota may name (default: the built-in classes).
func ConfigFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagConfig, EnvVars: []string{"ALLOT_GOVERNOR_CONFIG"},
		Usage: "governor config file (HCL) whose classes quotas are checked against"}
}

// Nomad returns a Nomad API client for the command's flags. The TLS
// settings of Nomad's own environment variables (NOMAD_CACERT, …) apply.
func Nomad(c *cli.Context) (*api.Client, error) {
	cfg := api.DefaultConfig()
	cfg.Address = address(c)
	cfg.SecretID = str(c, FlagToken)
	cfg.Namespace = ""
	// One command makes a handful of requests; keeping connections open
	// after it returns only matters when commands run in-process (tests),
	// where they would pile up until Nomad's per-client connection limit.
	cfg.HttpClient = oneShotHTTPClient()
	client, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating Nomad client for %s: %w", cfg.Address, err)
	}
	return client, nil
}

// oneShotHTTPClient is what Nomad's api package would build, minus
// keep-alives.
func oneShotHTTPClient() *http.Client {
	t := cleanhttp.DefaultTransport()
	t.DisableKeepAlives = true
	t.TLSHandshakeTimeout = 10 * time.Second
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	t.ForceAttemptHTTP2 = false // alloc exec websockets need HTTP/1
	return &http.Client{Transport: t}
}

// Governor returns a client of the governor's /allot/v1 API.
func Governor(c *cli.Context) *allotapi.Client {
	addr := str(c, FlagAllotAddress)
	if addr == "" {
		addr = address(c)
	}
	return &allotapi.Client{Address: strings.TrimRight(addr, "/"), Token: str(c, FlagToken),
		HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// GovernorAddress is where Governor's client connects, for messages.
func GovernorAddress(c *cli.Context) string { return Governor(c).Address }

// Classes returns the class names quotas may name: those of the governor
// config file given with -governor-config, else the built-in table.
func Classes(c *cli.Context) (map[string]bool, error) {
	cfg := config.Default()
	if path := c.String(FlagConfig); path != "" {
		if err := cfg.LoadFile(path); err != nil {
			return nil, fmt.Errorf("reading governor config %s: %w", path, err)
		}
	}
	out := map[string]bool{}
	for _, n := range cfg.ClassNames() {
		out[n] = true
	}
	return out, nil
}

// Namespace returns the -namespace flag, or def when it is empty.
func Namespace(c *cli.Context, def string) string {
	if ns := str(c, FlagNamespace); ns != "" {
		return ns
	}
	return def
}

// GlobalFlags are ConnFlags for the app level (`allotctl -address … tenant
// list`). A flag given on the command wins over the same flag given before
// it, which wins over the environment.
func GlobalFlags() []cli.Flag { return ConnFlags() }

// str returns the value of a connection flag: the innermost context where
// it was given on the command line, else the command's own value (from the
// environment or its default).
func str(c *cli.Context, name string) string {
	env, hasEnv := os.LookupEnv(envOf[name])
	for _, ctx := range c.Lineage() {
		for _, set := range ctx.LocalFlagNames() {
			// LocalFlagNames also lists flags set from the environment;
			// a value equal to the environment's is the same either way.
			if set == name && !(hasEnv && ctx.String(name) == env) {
				return ctx.String(name)
			}
		}
	}
	return c.String(name)
}

// address is Nomad's address; an empty NOMAD_ADDR means the default, as
// for the nomad CLI.
func address(c *cli.Context) string {
	if a := str(c, FlagAddress); a != "" {
		return a
	}
	return DefaultAddress
}

// envOf maps the connection flags to their environment variables.
var envOf = map[string]string{FlagAddress: "NOMAD_ADDR", FlagAllotAddress: "ALLOT_ADDR",
	FlagToken: "NOMAD_TOKEN", FlagNamespace: "NOMAD_NAMESPACE"}
