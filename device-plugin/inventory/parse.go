package inventory

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Inventory is a parsed inventory file: a node's accelerators.
type Inventory struct {
	// Seed makes device IDs deterministic and distinct between nodes; it
	// defaults to the file name without its extension.
	Seed          string
	DriverVersion string
	CUDAVersion   string
	// Models are the gpu/npu blocks in file order.
	Models []*Model
	// Unhealthy lists device IDs or "Model[i]" references, each optionally
	// followed by ": reason".
	Unhealthy []string
	// DeviceDir holds the devices' nodes on the host (see nodes.go); empty
	// means /dev.
	DeviceDir string
}

// Model is one `gpu "<model>"` or `npu "<model>"` block.
type Model struct {
	Kind              string // "gpu" or "npu"
	Name              string
	Vendor            string
	Count             int
	MemoryMiB         int64
	ComputeCapability string
	PowerLimitW       int
	Topology          string
	NVLinkLinks       int // -1: default for the topology
	Islands           [][]int
	NUMANodes         []int
	MIG               []*MIG

	rng hcl.Range
}

// MIG is a `mig "<profile>"` block inside a gpu block.
type MIG struct {
	Profile   string
	GPUs      []int
	Count     int
	MemoryMiB int64

	rng hcl.Range
}

var (
	topSchema = map[string]bool{"seed": true, "driver_version": true, "cuda_version": true, "unhealthy": true, deviceDirKey: true}
	topBlocks = map[string]bool{"gpu": true, "npu": true}
	modelKeys = map[string]bool{
		"vendor": true, "count": true, "memory_mib": true, "compute_capability": true, "power_limit_w": true,
		"topology": true, "nvlink_links": true, "islands": true, "numa_nodes": true,
	}
	migKeys    = map[string]bool{"gpus": true, "count": true, "memory_mib": true}
	topologies = map[string]bool{"nvswitch": true, "nvlink": true, "pcie": true, "hccs": true}
)

// Parse reads an inventory file's source; filename is used in error
// positions. Every problem is reported as an hcl diagnostic with its line.
func Parse(filename string, src []byte, defaultSeed string) (*Inventory, hcl.Diagnostics) {
	if diags := checkUTF8(filename, src); diags.HasErrors() {
		return nil, diags
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body := file.Body.(*hclsyntax.Body)
	inv := &Inventory{Seed: defaultSeed}
	diags = append(diags, unknownKeys(body, topSchema, topBlocks)...)
	diags = append(diags, decodeAttr(body, "seed", &inv.Seed)...)
	diags = append(diags, decodeAttr(body, "driver_version", &inv.DriverVersion)...)
	diags = append(diags, decodeAttr(body, "cuda_version", &inv.CUDAVersion)...)
	diags = append(diags, decodeAttr(body, "unhealthy", &inv.Unhealthy)...)
	diags = append(diags, decodeDeviceDir(body, inv)...)
	for _, blk := range body.Blocks {
		if !topBlocks[blk.Type] {
			continue
		}
		m, d := parseModel(blk)
		diags = append(diags, d...)
		if m != nil {
			inv.Models = append(inv.Models, m)
		}
	}
	diags = append(diags, duplicateBlocks(inv.Models)...)
	if !diags.HasErrors() {
		diags = append(diags, inv.duplicateIDs()...)
	}
	return inv, diags
}

func parseModel(blk *hclsyntax.Block) (*Model, hcl.Diagnostics) {
	if len(blk.Labels) != 1 || blk.Labels[0] == "" {
		return nil, errAt(blk.DefRange(), "block needs one label", fmt.Sprintf("write %s \"<model>\" { … }", blk.Type))
	}
	if d := checkName(blk.Labels[0], "model", blk.LabelRanges[0]); d.HasErrors() {
		return nil, d
	}
	m := &Model{Kind: blk.Type, Name: blk.Labels[0], Count: 1, NVLinkLinks: -1, rng: blk.DefRange()}
	m.Vendor, m.Topology = "nvidia", "nvswitch"
	if blk.Type == "npu" {
		m.Vendor, m.Topology = "huawei", "hccs"
	}
	b := blk.Body
	var diags hcl.Diagnostics
	migBlocks := map[string]bool{}
	if blk.Type == "gpu" {
		migBlocks["mig"] = true
	}
	diags = append(diags, unknownKeys(b, modelKeys, migBlocks)...)
	diags = append(diags, decodeAttr(b, "vendor", &m.Vendor)...)
	diags = append(diags, decodeAttr(b, "count", &m.Count)...)
	diags = append(diags, decodeAttr(b, "memory_mib", &m.MemoryMiB)...)
	diags = append(diags, decodeAttr(b, "compute_capability", &m.ComputeCapability)...)
	diags = append(diags, decodeAttr(b, "power_limit_w", &m.PowerLimitW)...)
	diags = append(diags, decodeAttr(b, "topology", &m.Topology)...)
	diags = append(diags, decodeAttr(b, "nvlink_links", &m.NVLinkLinks)...)
	diags = append(diags, decodeAttr(b, "islands", &m.Islands)...)
	diags = append(diags, decodeAttr(b, "numa_nodes", &m.NUMANodes)...)
	if a, ok := b.Attributes["vendor"]; ok && !diags.HasErrors() {
		diags = append(diags, checkName(m.Vendor, "vendor", a.Expr.Range())...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	diags = append(diags, validateModel(m, b)...)
	for _, mb := range b.Blocks {
		if mb.Type != "mig" {
			continue
		}
		mig, d := parseMIG(mb, m)
		diags = append(diags, d...)
		if mig != nil {
			m.MIG = append(m.MIG, mig)
		}
	}
	return m, diags
}

func validateModel(m *Model, b *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	at := func(key string) hcl.Range {
		if a, ok := b.Attributes[key]; ok {
			return a.SrcRange
		}
		return m.rng
	}
	if m.Count < 1 || m.Count > 1024 {
		diags = append(diags, errAt(at("count"), "count out of range", fmt.Sprintf("count = %d, want 1..1024", m.Count))...)
	}
	if m.MemoryMiB < 0 {
		diags = append(diags, errAt(at("memory_mib"), "negative memory", "memory_mib must be ≥ 0")...)
	}
	if !topologies[m.Topology] {
		diags = append(diags, errAt(at("topology"), "unknown topology", fmt.Sprintf("%q: want nvswitch, nvlink, pcie or hccs", m.Topology))...)
	}
	if len(m.NUMANodes) > 0 && len(m.NUMANodes) != m.Count {
		diags = append(diags, errAt(at("numa_nodes"), "numa_nodes length mismatch",
			fmt.Sprintf("%d entries for count = %d: give one NUMA node per device", len(m.NUMANodes), m.Count))...)
	}
	if len(m.Islands) > 0 && m.Topology != "nvlink" {
		diags = append(diags, errAt(at("islands"), "islands need topology = \"nvlink\"", fmt.Sprintf("topology is %q", m.Topology))...)
	}
	seen := map[int]bool{}
	for _, isl := range m.Islands {
		for _, i := range isl {
			if i < 0 || i >= m.Count || seen[i] {
				diags = append(diags, errAt(at("islands"), "bad island member",
					fmt.Sprintf("index %d is out of range 0..%d or in two islands", i, m.Count-1))...)
			}
			seen[i] = true
		}
	}
	return diags
}

func parseMIG(blk *hclsyntax.Block, m *Model) (*MIG, hcl.Diagnostics) {
	if len(blk.Labels) != 1 || blk.Labels[0] == "" {
		return nil, errAt(blk.DefRange(), "mig block needs one label", `write mig "<profile>" { … }, e.g. mig "1g.18gb"`)
	}
	if d := checkName(blk.Labels[0], "mig profile", blk.LabelRanges[0]); d.HasErrors() {
		return nil, d
	}
	mig := &MIG{Profile: blk.Labels[0], Count: 1, rng: blk.DefRange()}
	var diags hcl.Diagnostics
	diags = append(diags, unknownKeys(blk.Body, migKeys, nil)...)
	diags = append(diags, decodeAttr(blk.Body, "gpus", &mig.GPUs)...)
	diags = append(diags, decodeAttr(blk.Body, "count", &mig.Count)...)
	diags = append(diags, decodeAttr(blk.Body, "memory_mib", &mig.MemoryMiB)...)
	if diags.HasErrors() {
		return nil, diags
	}
	listed := map[int]bool{}
	for _, g := range mig.GPUs {
		if g < 0 || g >= m.Count {
			diags = append(diags, errAt(blk.DefRange(), "mig gpu out of range", fmt.Sprintf("gpu %d, model has %d", g, m.Count))...)
		}
		if listed[g] {
			diags = append(diags, errAt(blk.Body.Attributes["gpus"].SrcRange, "mig gpu listed twice",
				fmt.Sprintf("gpu %d appears twice in gpus: its %q instances would get the same IDs", g, mig.Profile))...)
		}
		listed[g] = true
	}
	if mig.Count < 1 || mig.Count > 7 {
		diags = append(diags, errAt(blk.DefRange(), "mig count out of range", fmt.Sprintf("count = %d, want 1..7", mig.Count))...)
	}
	return mig, diags
}

// decodeAttr decodes an optional attribute into target.
func decodeAttr(b *hclsyntax.Body, name string, target any) hcl.Diagnostics {
	a, ok := b.Attributes[name]
	if !ok {
		return nil
	}
	return gohcl.DecodeExpression(a.Expr, nil, target)
}

// unknownKeys reports attributes and blocks the schema does not know, so a
// typo is an error with its line instead of a silent default.
func unknownKeys(b *hclsyntax.Body, attrs, blocks map[string]bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(b.Attributes))
	for n := range b.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !attrs[n] {
			diags = append(diags, errAt(b.Attributes[n].NameRange, "unsupported attribute", fmt.Sprintf("%q is not an inventory attribute here", n))...)
		}
	}
	for _, blk := range b.Blocks {
		if !blocks[blk.Type] {
			diags = append(diags, errAt(blk.TypeRange, "unsupported block", fmt.Sprintf("%q blocks are not expected here", blk.Type))...)
		}
	}
	return diags
}

func errAt(r hcl.Range, summary, detail string) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r.Ptr()}}
}
