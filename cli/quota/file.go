package quota

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	gq "github.com/allot-sh/allot/governor/quota"
)

// tenantsFile is the format of `quota apply -f`: one tenant block per
// namespace, with the inputs of the Terraform tenant module.
type tenantsFile struct {
	Tenants []fileTenant `hcl:"tenant,block"`
}

type fileTenant struct {
	Name         string            `hcl:"name,label"`
	Cohort       *string           `hcl:"cohort,optional"`
	Weight       *float64          `hcl:"weight,optional"`
	Quota        map[string]string `hcl:"quota,optional"`
	Limit        map[string]string `hcl:"limit,optional"`
	Lend         map[string]string `hcl:"lend,optional"`
	Classes      []string          `hcl:"classes,optional"`
	DefaultClass *string           `hcl:"default_class,optional"`
}

// Desired is the complete allot.* meta one namespace should carry.
type Desired struct {
	Namespace string
	Allot     map[string]string
}

// LoadFile reads a tenants file. Every problem (syntax, unknown
// attributes, duplicate tenants, unknown resources, bad amounts) is
// reported with its position.
func LoadFile(path string) ([]Desired, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return ParseFile(path, src)
}

// ParseFile parses the content of a tenants file named path.
func ParseFile(path string, src []byte) ([]Desired, error) {
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, fmt.Errorf("parsing %s: %w", path, diags)
	}
	var tf tenantsFile
	if diags := gohcl.DecodeBody(f.Body, nil, &tf); diags.HasErrors() {
		return nil, fmt.Errorf("decoding %s: %w", path, diags)
	}
	if len(tf.Tenants) == 0 {
		return nil, fmt.Errorf("%s: no tenant blocks (want: tenant \"<namespace>\" { quota = { gpu = 8 } })", path)
	}
	seen := map[string]bool{}
	var out []Desired
	var errs []string
	for _, t := range tf.Tenants {
		if seen[t.Name] {
			errs = append(errs, fmt.Sprintf("tenant %q is declared twice", t.Name))
		}
		seen[t.Name] = true
		d, err := t.desired()
		if err != nil {
			errs = append(errs, fmt.Sprintf("tenant %q: %v", t.Name, err))
		}
		out = append(out, d)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(errs, "; "))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out, nil
}

// desired turns a tenant block into allot.* meta, as modules/tenant does.
func (t fileTenant) desired() (Desired, error) {
	d := Desired{Namespace: t.Name, Allot: map[string]string{}}
	if t.Cohort != nil {
		d.Allot[gq.KeyCohort] = strings.TrimSpace(*t.Cohort)
	}
	if t.Weight != nil {
		d.Allot[gq.KeyWeight] = FormatWeight(*t.Weight)
	}
	if len(t.Classes) > 0 {
		d.Allot[gq.KeyClasses] = strings.Join(t.Classes, ",")
	}
	if t.DefaultClass != nil {
		d.Allot[gq.KeyDefaultClass] = *t.DefaultClass
	}
	for _, part := range []struct {
		prefix  string
		amounts map[string]string
	}{{gq.PrefixQuota, t.Quota}, {gq.PrefixLimit, t.Limit}, {gq.PrefixLend, t.Lend}} {
		for _, res := range sortedKeys(part.amounts) {
			key, amount, err := ParsePair(part.prefix, res+"="+part.amounts[res])
			if err != nil {
				return d, err
			}
			d.Allot[key] = amount
		}
	}
	return d, nil
}

// Replace returns meta with its quota allot.* keys replaced by allot;
// other keys (allot.idle.* included) stay.
func Replace(meta, allot map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range meta {
		if !gq.IsQuotaKey(k) {
			out[k] = v
		}
	}
	for k, v := range allot {
		out[k] = v
	}
	return out
}
