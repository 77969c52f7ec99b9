package auth

import "strings"

// Hidden replaces a hidden job ("ns/id") or tenant name in a text.
const Hidden = "(hidden)"

// Redactor hides, in texts shown to one caller (reasons and check
// details), the namespaces that caller may not read and the jobs in them:
// the engine's reasons name other jobs ("waiting behind ns/id",
// "preempting ns/a, ns/b", "preempted by ns/id") and tenants ("tenant ns
// reclaims ..."). The zero Redactor changes nothing.
type Redactor struct{ hidden []string }

// Redactor returns the redactor for c over namespaces (all namespaces
// Nomad has): every one c may not read is hidden.
func (c *Caller) Redactor(namespaces []string) Redactor {
	var rd Redactor
	if c.Management() {
		return rd
	}
	for _, ns := range namespaces {
		if !c.CanRead(ns) {
			rd.hidden = append(rd.hidden, ns)
		}
	}
	return rd
}

// Text returns t with every hidden namespace, and every job in one,
// replaced by "(hidden)".
func (rd Redactor) Text(t string) string {
	for _, ns := range rd.hidden {
		if !strings.Contains(t, ns) {
			continue
		}
		t = replaceJobs(t, ns)
		t = replaceWord(t, "tenant "+ns, "tenant "+Hidden)
		t = replaceWord(t, "namespace "+ns, "namespace "+Hidden)
	}
	return t
}

// jobEnds are what follows a job key ("ns/id") in the engine's texts.
var jobEnds = []string{", which ", " (", ", ", "; ", ")"}

// replaceJobs replaces every "ns/<id>" that starts at a word boundary,
// the ID ending at the first of jobEnds or at the end of the text (so an
// ID the engine's texts do not delimit hides the rest of the text).
func replaceJobs(t, ns string) string {
	prefix := ns + "/"
	var b strings.Builder
	for {
		i := indexAtBoundary(t, prefix)
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:i])
		rest := t[i+len(prefix):]
		end := len(rest)
		for _, e := range jobEnds {
			if k := strings.Index(rest, e); k >= 0 && k < end {
				end = k
			}
		}
		b.WriteString(Hidden)
		t = rest[end:]
	}
}

// replaceWord replaces old where it is a whole word (boundaries on both
// sides).
func replaceWord(t, old, repl string) string {
	var b strings.Builder
	for {
		i := indexAtBoundary(t, old)
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		after := t[i+len(old):]
		if after != "" && !isBoundary(after[0]) {
			b.WriteString(t[:i+len(old)])
			t = after
			continue
		}
		b.WriteString(t[:i])
		b.WriteString(repl)
		t = after
	}
}

// indexAtBoundary is strings.Index of s in t where s starts the text or
// follows a boundary byte.
func indexAtBoundary(t, s string) int {
	off := 0
	for {
		i := strings.Index(t[off:], s)
		if i < 0 {
			return -1
		}
		at := off + i
		if at == 0 || isBoundary(t[at-1]) {
			return at
		}
		off = at + 1
	}
}

func isBoundary(c byte) bool {
	return strings.IndexByte(" ,;:()[]\"'\t\n", c) >= 0
}
