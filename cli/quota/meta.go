package quota

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	gq "github.com/allot-sh/allot/governor/quota"
)

// Edits change a namespace's meta: a key mapped to nil is removed, any
// other key is set to the value.
type Edits map[string]*string

// set records key = value.
func (e Edits) set(key, value string) { e[key] = &value }

// Apply returns meta with the edits applied; meta itself is not changed.
// A removal of a key that is not there is an error.
func (e Edits) Apply(meta map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(meta)+len(e))
	for k, v := range meta {
		out[k] = v
	}
	var missing []string
	for _, k := range sortedKeys(e) {
		if v := e[k]; v != nil {
			out[k] = *v
			continue
		}
		if _, ok := out[k]; !ok {
			missing = append(missing, k)
		}
		delete(out, k)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not set, nothing to unset: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// ParsePair reads "res=amount" for prefix (allot.quota., allot.limit. or
// allot.lend.) and checks the resource and the amount as the governor will.
func ParsePair(prefix, pair string) (key, amount string, err error) {
	res, amount, ok := strings.Cut(pair, "=")
	res, amount = strings.TrimSpace(res), strings.TrimSpace(amount)
	if !ok || res == "" {
		return "", "", fmt.Errorf("%q: want resource=amount, e.g. gpu=8 or memory=256GiB", pair)
	}
	key, err = gq.CheckAmount(prefix, res, amount)
	if err != nil {
		return "", "", err
	}
	return key, amount, nil
}

// ErrInvalid is wrapped by every rejection of a namespace's new meta.
var ErrInvalid = errors.New("not written")

// Validate parses meta with the governor's quota parser. classes are the
// class names the governor knows.
func Validate(ns string, meta map[string]string, classes map[string]bool) (gq.Tenant, error) {
	t, err := gq.Parse(ns, meta, classes)
	if err != nil {
		return t, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return t, nil
}

// FormatWeight renders a weight as the meta stores it.
func FormatWeight(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

// AllotKeys returns the quota's allot.* part of meta (not allot.idle.*).
func AllotKeys(meta map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range meta {
		if gq.IsQuotaKey(k) {
			out[k] = v
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
