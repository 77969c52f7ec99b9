// Package fleet describes a simulated cluster: node kinds, each a device
// plugin inventory file (the same file a demo node's nomad-device-accel
// reads) with a count, node pool and host resources, plus the tenants and
// their quotas. One small file describes the demo cluster or a
// 1,000-node one.
package fleet

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/allot-sh/allot/device-plugin/inventory"
	"github.com/allot-sh/allot/governor/engine"
)

// Spec is a parsed cluster file.
type Spec struct {
	// Path is the file the spec came from; inventories are relative to it.
	Path    string
	Kinds   []*Kind
	Tenants []*Tenant
}

// Kind is one `node "<name>" { … }` block: Count identical nodes.
type Kind struct {
	Name       string `hcl:"name,label"`
	Inventory  string `hcl:"inventory"`
	Count      int    `hcl:"count"`
	Pool       string `hcl:"pool,optional"`
	Datacenter string `hcl:"datacenter,optional"`
	CPU        int64  `hcl:"cpu_mhz"`
	MemoryMB   int64  `hcl:"memory_mib"`
	// Groups are the node's device groups from the inventory (grouping
	// "none": one group per model, healthy instances counted).
	Groups []engine.DeviceGroup
}

// Tenant is one `tenant "<namespace>" { … }` block. Quota and limit of
// GPUs are fractions of the cluster's GPUs so the same file scales; Meta
// adds any other allot.* namespace meta, exactly as written on Nomad.
type Tenant struct {
	Name string `hcl:"name,label"`
	// Load is the tenant's share of the generated submissions.
	Load       float64           `hcl:"load"`
	GPUQuota   float64           `hcl:"gpu_quota"`
	GPULimit   float64           `hcl:"gpu_limit,optional"`
	Meta       map[string]string `hcl:"meta,optional"`
	lineNumber int
}

type file struct {
	Nodes   []*Kind   `hcl:"node,block"`
	Tenants []*Tenant `hcl:"tenant,block"`
}

// Load reads a cluster file and every inventory it names. Errors name the
// file and line.
func Load(path string) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading cluster file: %w", err)
	}
	return Parse(path, src)
}

// Parse parses a cluster file's source; inventories are read relative to
// the directory of path.
func Parse(path string, src []byte) (*Spec, error) {
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	var raw file
	if diags := gohcl.DecodeBody(f.Body, nil, &raw); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	body := f.Body.(*hclsyntax.Body)
	s := &Spec{Path: path, Kinds: raw.Nodes, Tenants: raw.Tenants}
	for i, blk := range blocks(body, "node") {
		if err := s.loadKind(s.Kinds[i], blk); err != nil {
			return nil, err
		}
	}
	for i, blk := range blocks(body, "tenant") {
		t := s.Tenants[i]
		t.lineNumber = blk.DefRange().Start.Line
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: tenant %q: %w", path, t.lineNumber, t.Name, err)
		}
	}
	if len(s.Kinds) == 0 {
		return nil, fmt.Errorf("%s: no node blocks", path)
	}
	return s, nil
}

func blocks(b *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, blk := range b.Blocks {
		if blk.Type == typ {
			out = append(out, blk)
		}
	}
	return out
}

func diagErr(diags hcl.Diagnostics) error {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			if d.Subject != nil {
				return fmt.Errorf("%s:%d,%d: %s: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail)
			}
			return fmt.Errorf("%s: %s", d.Summary, d.Detail)
		}
	}
	return diags
}

func (s *Spec) loadKind(k *Kind, blk *hclsyntax.Block) error {
	at := fmt.Sprintf("%s:%d", s.Path, blk.DefRange().Start.Line)
	switch {
	case k.Count < 0:
		return fmt.Errorf("%s: node %q: count %d must be ≥ 0", at, k.Name, k.Count)
	case k.CPU <= 0 || k.MemoryMB <= 0:
		return fmt.Errorf("%s: node %q: cpu_mhz and memory_mib must be > 0", at, k.Name)
	}
	if k.Pool == "" {
		k.Pool = "default"
	}
	if k.Datacenter == "" {
		k.Datacenter = "dc1"
	}
	inv := k.Inventory
	if !filepath.IsAbs(inv) {
		inv = filepath.Join(filepath.Dir(s.Path), inv)
	}
	groups, err := Groups(inv)
	if err != nil {
		return fmt.Errorf("%s: node %q: %w", at, k.Name, err)
	}
	k.Groups = groups
	return nil
}

func (t *Tenant) validate() error {
	switch {
	case !(t.Load >= 0):
		return fmt.Errorf("load %v must be ≥ 0", t.Load)
	case !(t.GPUQuota >= 0 && t.GPUQuota <= 1):
		return fmt.Errorf("gpu_quota %v must be a fraction 0..1 of the cluster's GPUs", t.GPUQuota)
	case t.GPULimit != 0 && !(t.GPULimit >= t.GPUQuota && t.GPULimit <= 1):
		return fmt.Errorf("gpu_limit %v must be a fraction between gpu_quota and 1", t.GPULimit)
	}
	return nil
}

// Groups reads an inventory file the way nomad-device-accel does (health
// from its unhealthy list, topology_grouping "none") and returns the
// node's device groups with their healthy instance counts.
func Groups(path string) ([]engine.DeviceGroup, error) {
	devs, err := inventory.New(path).Fingerprint(context.Background())
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	byID := map[string]*engine.DeviceGroup{}
	var order []string
	for _, d := range devs {
		if d.MIGEnabled {
			continue // offered only through its MIG instances
		}
		model := d.Model
		if d.MIGProfile != "" {
			model += "-" + d.MIGProfile
		}
		id := d.Vendor + "/" + d.Type + "/" + model
		g, ok := byID[id]
		if !ok {
			g = &engine.DeviceGroup{Vendor: d.Vendor, Type: d.Type, Model: model, Attributes: map[string]string{
				"model": d.Model, "memory": fmt.Sprintf("%d MiB", d.MemoryMiB), "topology": d.Topology,
				"compute_capability": d.ComputeCapability}}
			byID[id] = g
			order = append(order, id)
		}
		if d.Healthy {
			g.Healthy++
		}
	}
	out := make([]engine.DeviceGroup, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out, nil
}

// Nodes expands the spec into engine nodes with IDs "<kind>-<n>".
func (s *Spec) Nodes() []*engine.Node {
	var out []*engine.Node
	for _, k := range s.Kinds {
		for i := 0; i < k.Count; i++ {
			id := fmt.Sprintf("%s-%04d", k.Name, i)
			out = append(out, &engine.Node{ID: id, Name: id, Pool: k.Pool, Datacenter: k.Datacenter, Class: k.Name,
				Ready: true, CPU: k.CPU, MemoryMB: k.MemoryMB, Devices: k.Groups,
				Attributes: map[string]string{}, Meta: map[string]string{}})
		}
	}
	return out
}

// GPUs counts the healthy GPUs of the whole cluster.
func (s *Spec) GPUs() int {
	n := 0
	for _, k := range s.Kinds {
		for _, g := range k.Groups {
			if g.Type == "gpu" {
				n += g.Healthy * k.Count
			}
		}
	}
	return n
}

// Scale sets the node counts so the cluster has about total nodes, keeping
// the kinds' proportions.
func (s *Spec) Scale(total int) {
	have := 0
	for _, k := range s.Kinds {
		have += k.Count
	}
	if have == 0 || total < 1 {
		return
	}
	for _, k := range s.Kinds {
		k.Count = int(math.Round(float64(k.Count) * float64(total) / float64(have)))
	}
}

// NamespaceMeta returns tenant t's namespace meta for a cluster of gpus GPUs.
func (t *Tenant) NamespaceMeta(gpus int) map[string]string {
	meta := map[string]string{}
	for k, v := range t.Meta {
		meta[k] = v
	}
	meta["allot.quota.gpu"] = fmt.Sprint(int(math.Round(t.GPUQuota * float64(gpus))))
	if t.GPULimit > 0 {
		meta["allot.limit.gpu"] = fmt.Sprint(int(math.Round(t.GPULimit * float64(gpus))))
	}
	return meta
}

// TenantNames returns the tenants' names, sorted.
func (s *Spec) TenantNames() []string {
	out := make([]string, 0, len(s.Tenants))
	for _, t := range s.Tenants {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// String summarises the cluster ("64 × h200 (8 nvidia/gpu/H200, …)").
func (s *Spec) String() string {
	var parts []string
	for _, k := range s.Kinds {
		var gs []string
		for _, g := range k.Groups {
			gs = append(gs, fmt.Sprintf("%d %s", g.Healthy, g.ID()))
		}
		parts = append(parts, fmt.Sprintf("%d × %s (%s)", k.Count, k.Name, strings.Join(gs, ", ")))
	}
	return strings.Join(parts, "; ")
}
