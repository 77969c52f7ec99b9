package quota

import (
	"sort"
	"sync"
)

// Entry is what the governor currently believes about one namespace.
type Entry struct {
	// Tenant is the last valid quota of the namespace, or a zero quota
	// when its meta has never been valid.
	Tenant Tenant
	// Err is the validation error of the namespace's current meta; nil
	// when the current meta is valid (and Tenant reflects it).
	Err error
	// EverValid tells whether Tenant comes from a valid meta at all.
	EverValid bool
}

// Book keeps the tenants of every governed namespace and applies the
// last-valid-config rule: a malformed meta never replaces a valid quota,
// and a namespace that never had a valid one gets a zero quota. Safe for
// concurrent use.
type Book struct {
	mu      sync.Mutex
	classes map[string]bool
	entries map[string]Entry
}

// NewBook returns an empty book; classes are the known class names.
func NewBook(classes []string) *Book {
	known := make(map[string]bool, len(classes))
	for _, c := range classes {
		known[c] = true
	}
	return &Book{classes: known, entries: map[string]Entry{}}
}

// Update records the current meta of namespace ns and returns the entry it
// leads to. A namespace without allot.* keys is removed (not governed).
func (b *Book) Update(ns string, meta map[string]string) (Entry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !Governed(meta) {
		delete(b.entries, ns)
		return Entry{}, false
	}
	t, err := Parse(ns, meta, b.classes)
	prev, had := b.entries[ns]
	switch {
	case err == nil:
		b.entries[ns] = Entry{Tenant: t, EverValid: true}
	case had && prev.EverValid:
		b.entries[ns] = Entry{Tenant: prev.Tenant, Err: err, EverValid: true}
	default:
		b.entries[ns] = Entry{Tenant: zeroTenant(ns, b.classes), Err: err}
	}
	return b.entries[ns], true
}

// Remove forgets namespace ns (it was deleted).
func (b *Book) Remove(ns string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, ns)
}

// Retain forgets every namespace not in keep.
func (b *Book) Retain(keep map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ns := range b.entries {
		if !keep[ns] {
			delete(b.entries, ns)
		}
	}
}

// Get returns the entry of namespace ns and whether it is governed.
func (b *Book) Get(ns string) (Entry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[ns]
	return e, ok
}

// All returns every entry, ordered by namespace.
func (b *Book) All() []Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Entry, 0, len(b.entries))
	for _, e := range b.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tenant.Namespace < out[j].Tenant.Namespace })
	return out
}

// zeroTenant is the quota of a namespace whose meta was never valid: every
// basic resource is governed with nominal and limit zero, so its jobs queue
// with the validation error as reason. It sits in a cohort of its own so
// that it changes nothing for other tenants.
func zeroTenant(ns string, classes map[string]bool) Tenant {
	zero := Vector{CPU: 0, Memory: 0, GPU: 0, NPU: 0}
	def := DefaultClassName
	if !classes[def] {
		def = ""
	}
	return Tenant{Namespace: ns, Cohort: "invalid-meta:" + ns, Weight: 1, DefaultClass: def,
		Quota: zero.Clone(), Limit: zero.Clone(), Lend: Vector{}}
}
