// Package quota turns the allot.* meta of a Nomad namespace into the quota
// of a tenant, validating every key.
package quota

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Meta keys and prefixes read from a namespace (see ARCHITECTURE.md).
const (
	MetaPrefix       = "allot."
	KeyCohort        = "allot.cohort"
	KeyWeight        = "allot.weight"
	KeyClasses       = "allot.classes"
	KeyDefaultClass  = "allot.default-class"
	PrefixQuota      = "allot.quota."
	PrefixLimit      = "allot.limit."
	PrefixLend       = "allot.lend."
	DefaultCohort    = "default"
	DefaultClassName = "standard"
)

// ErrInvalid is wrapped by every validation error of a namespace's meta.
var ErrInvalid = errors.New("invalid quota")

// Tenant is the quota of one governed namespace.
type Tenant struct {
	// Namespace is the Nomad namespace the tenant is.
	Namespace string
	// Cohort groups tenants that borrow each other's unused nominal quota.
	Cohort string
	// Weight is the fair-share weight, > 0.
	Weight float64
	// Quota is the nominal (guaranteed) amount of each resource.
	Quota Vector
	// Limit is the hard maximum including borrowing; a resource missing
	// here is bounded only by what the cohort can lend.
	Limit Vector
	// Lend caps how much of the nominal may be lent out; a resource
	// missing here may be lent in full.
	Lend Vector
	// Classes lists the classes the tenant may use explicitly; empty means
	// every unrestricted class.
	Classes []string
	// DefaultClass is the class of jobs that name none.
	DefaultClass string
}

// Governs reports whether the tenant declares a quota, limit or lend for
// resource res; the governor only checks declared resources.
func (t *Tenant) Governs(res string) bool {
	_, q := t.Quota[res]
	_, l := t.Limit[res]
	_, d := t.Lend[res]
	return q || l || d
}

// LendCap returns how much of the nominal quota of res may be lent out.
func (t *Tenant) LendCap(res string) int64 {
	if n, ok := t.Lend[res]; ok {
		return n
	}
	return t.Quota[res]
}

// PrefixIdle keys belong to the idle policy (governor/idle), not to the
// quota: quota parsing, governance and quota files ignore them.
const PrefixIdle = "allot.idle."

// Governed reports whether a namespace's meta carries any allot.* key.
func Governed(meta map[string]string) bool {
	for k := range meta {
		if IsQuotaKey(k) {
			return true
		}
	}
	return false
}

// IsQuotaKey reports whether a namespace meta key is one of the quota's
// allot.* keys (the idle policy's allot.idle.* keys are not).
func IsQuotaKey(k string) bool {
	return strings.HasPrefix(k, MetaPrefix) && !strings.HasPrefix(k, PrefixIdle)
}

// Parse builds the tenant of namespace ns from its meta. classes is the set
// of class names the governor knows. Every problem is reported; the tenant
// is only meaningful when the returned error is nil.
func Parse(ns string, meta map[string]string, classes map[string]bool) (Tenant, error) {
	t := Tenant{Namespace: ns, Cohort: DefaultCohort, Weight: 1, DefaultClass: DefaultClassName,
		Quota: Vector{}, Limit: Vector{}, Lend: Vector{}}
	var errs []error
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if IsQuotaKey(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := t.apply(k, meta[k], classes); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", k, meta[k], err))
		}
	}
	errs = append(errs, t.crossCheck(classes)...)
	if len(errs) > 0 {
		return t, fmt.Errorf("%w for namespace %s: %w", ErrInvalid, ns, errors.Join(errs...))
	}
	return t, nil
}

// apply reads one allot.* key into t.
func (t *Tenant) apply(key, val string, classes map[string]bool) error {
	switch key {
	case KeyCohort:
		if strings.TrimSpace(val) == "" {
			return errors.New("cohort must not be empty")
		}
		t.Cohort = strings.TrimSpace(val)
	case KeyWeight:
		w, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(w > 0) || w > 1e6 {
			return errors.New("weight must be a number > 0")
		}
		t.Weight = w
	case KeyClasses:
		return t.applyClasses(val, classes)
	case KeyDefaultClass:
		t.DefaultClass = strings.TrimSpace(val)
	default:
		return t.applyAmount(key, val)
	}
	return nil
}

func (t *Tenant) applyClasses(val string, classes map[string]bool) error {
	var bad []string
	t.Classes = nil
	for _, c := range strings.Split(val, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !classes[c] {
			bad = append(bad, c)
		}
		t.Classes = append(t.Classes, c)
	}
	if len(bad) > 0 {
		return fmt.Errorf("unknown class(es) %s", strings.Join(bad, ", "))
	}
	return nil
}

func (t *Tenant) applyAmount(key, val string) error {
	var target Vector
	var res string
	switch {
	case strings.HasPrefix(key, PrefixQuota):
		target, res = t.Quota, strings.TrimPrefix(key, PrefixQuota)
	case strings.HasPrefix(key, PrefixLimit):
		target, res = t.Limit, strings.TrimPrefix(key, PrefixLimit)
	case strings.HasPrefix(key, PrefixLend):
		target, res = t.Lend, strings.TrimPrefix(key, PrefixLend)
	default:
		return errors.New("unknown allot key (known: allot.cohort, allot.weight, allot.classes, allot.default-class, allot.quota.<res>, allot.limit.<res>, allot.lend.<res>)")
	}
	if !ValidResource(res) {
		return fmt.Errorf("unknown resource %q (cpu, memory, gpu, npu or vendor/type/model)", res)
	}
	n, err := ParseAmount(res, val)
	if err != nil {
		return err
	}
	target[res] = n
	return nil
}

// crossCheck validates rules that span keys.
func (t *Tenant) crossCheck(classes map[string]bool) []error {
	var errs []error
	if !classes[t.DefaultClass] {
		errs = append(errs, fmt.Errorf("%s: unknown class %q", KeyDefaultClass, t.DefaultClass))
	}
	for _, res := range t.Limit.Keys() {
		if q, ok := t.Quota[res]; ok && t.Limit[res] < q {
			errs = append(errs, fmt.Errorf("%s%s=%d is below %s%s=%d", PrefixLimit, res, t.Limit[res], PrefixQuota, res, q))
		}
	}
	for _, res := range t.Lend.Keys() {
		if t.Lend[res] > t.Quota[res] {
			errs = append(errs, fmt.Errorf("%s%s=%d exceeds %s%s=%d", PrefixLend, res, t.Lend[res], PrefixQuota, res, t.Quota[res]))
		}
	}
	return errs
}

// MayUse reports whether the tenant may run jobs of class c. When the
// tenant lists its classes only those are allowed; otherwise every class
// that is not restricted.
func (t *Tenant) MayUse(c string, restricted bool) bool {
	if len(t.Classes) == 0 {
		return !restricted
	}
	for _, name := range t.Classes {
		if name == c {
			return true
		}
	}
	return false
}
