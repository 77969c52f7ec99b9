package accel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/plugins/shared/hclspec"
)

// Topology groupings: how a node's devices of one model are split into
// Nomad device groups. Nomad picks instances at random inside a group and a
// request never spans groups, so the grouping decides which devices a
// multi-device request can land on together.
const (
	GroupingNone   = "none"
	GroupingIsland = "island"
	GroupingNUMA   = "numa"
)

// Defaults of the plugin config, declared once: the hclspec below and
// DefaultConfig both use them.
const (
	defaultBackend           = "detect"
	defaultFingerprintPeriod = 10 * time.Second
	defaultGrouping          = GroupingNone
	defaultNPUSmiPath        = "npu-smi"
)

// DefaultBenignXIDs are the NVML XIDs that signal an application error, not
// a broken GPU; nomad-device-accel does not mark a GPU unhealthy for them.
var DefaultBenignXIDs = []int{13, 31, 43, 45, 68, 109}

// hclString, hclStrings and hclInts render a default as an HCL literal.
func hclString(v string) *hclspec.Spec { return hclspec.NewLiteral(strconv.Quote(v)) }

func hclStrings(vs []string) *hclspec.Spec {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return hclspec.NewLiteral("[" + strings.Join(q, ", ") + "]")
}

func hclInts(vs []int) *hclspec.Spec {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Itoa(v)
	}
	return hclspec.NewLiteral("[" + strings.Join(q, ", ") + "]")
}

// configSpec is the plugin's `config { … }` block in the agent config.
var configSpec = hclspec.NewObject(map[string]*hclspec.Spec{
	"backends": hclspec.NewDefault(
		hclspec.NewAttr("backends", "list(string)", false),
		hclStrings([]string{defaultBackend}),
	),
	"inventory_file": hclspec.NewAttr("inventory_file", "string", false),
	"fingerprint_period": hclspec.NewDefault(
		hclspec.NewAttr("fingerprint_period", "string", false),
		hclString(defaultFingerprintPeriod.String()),
	),
	"ignored_devices": hclspec.NewAttr("ignored_devices", "list(string)", false),
	"topology_grouping": hclspec.NewDefault(
		hclspec.NewAttr("topology_grouping", "string", false),
		hclString(defaultGrouping),
	),
	"benign_xids": hclspec.NewDefault(
		hclspec.NewAttr("benign_xids", "list(number)", false),
		hclInts(DefaultBenignXIDs),
	),
	"npu_smi_path": hclspec.NewDefault(
		hclspec.NewAttr("npu_smi_path", "string", false),
		hclString(defaultNPUSmiPath),
	),
})

// ConfigSpec returns the hclspec of the plugin's config block.
func ConfigSpec() *hclspec.Spec { return configSpec }

// Config is the decoded plugin config. Its codec tags are the agent config
// keys.
type Config struct {
	// Backends lists the backends to run: "nvml", "ascend", "inventory",
	// or "detect" (inventory when inventory_file is set, else every
	// hardware backend whose library or tool is present).
	Backends []string `codec:"backends"`
	// InventoryFile is the inventory backend's HCL file.
	InventoryFile string `codec:"inventory_file"`
	// FingerprintPeriod is how often devices and health are re-read.
	FingerprintPeriod string `codec:"fingerprint_period"`
	// IgnoredDevices are device IDs never offered to Nomad.
	IgnoredDevices []string `codec:"ignored_devices"`
	// TopologyGrouping is none, island or numa.
	TopologyGrouping string `codec:"topology_grouping"`
	// BenignXIDs are NVML XIDs that do not make a GPU unhealthy.
	BenignXIDs []int `codec:"benign_xids"`
	// NPUSmiPath is the npu-smi command the ascend backend runs.
	NPUSmiPath string `codec:"npu_smi_path"`

	period time.Duration
}

// DefaultConfig is the config a plugin block without a config gets.
func DefaultConfig() *Config {
	return &Config{
		Backends:          []string{defaultBackend},
		FingerprintPeriod: defaultFingerprintPeriod.String(),
		TopologyGrouping:  defaultGrouping,
		BenignXIDs:        append([]int(nil), DefaultBenignXIDs...),
		NPUSmiPath:        defaultNPUSmiPath,
		period:            defaultFingerprintPeriod,
	}
}

// Period is the parsed fingerprint period (valid after Validate).
func (c *Config) Period() time.Duration { return c.period }

// Validate checks the config and reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	d, err := time.ParseDuration(c.FingerprintPeriod)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("fingerprint_period %q: %w", c.FingerprintPeriod, err))
	case d <= 0:
		errs = append(errs, fmt.Errorf("fingerprint_period %q must be positive", c.FingerprintPeriod))
	default:
		c.period = d
	}
	switch c.TopologyGrouping {
	case GroupingNone, GroupingIsland, GroupingNUMA:
	default:
		errs = append(errs, fmt.Errorf("topology_grouping %q: want none, island or numa", c.TopologyGrouping))
	}
	if len(c.Backends) == 0 {
		errs = append(errs, errors.New("backends is empty"))
	}
	for _, b := range c.Backends {
		switch b {
		case "detect", "nvml", "ascend":
		case "inventory":
			if c.InventoryFile == "" {
				errs = append(errs, errors.New("backend inventory needs inventory_file"))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown backend %q: want detect, nvml, ascend or inventory", b))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid nomad-device-accel config: %w", errors.Join(errs...))
	}
	return nil
}

// String is a one-line summary for logs.
func (c *Config) String() string {
	return fmt.Sprintf("backends=%s inventory_file=%q fingerprint_period=%s topology_grouping=%s ignored=%d",
		strings.Join(c.Backends, ","), c.InventoryFile, c.FingerprintPeriod, c.TopologyGrouping, len(c.IgnoredDevices))
}
