package server

import (
	"strings"

	"github.com/allot-sh/allot/governor/auth"
)

// hiddenName replaces a hidden job ("ns/id") or tenant name in a text.
const hiddenName = "(hidden)"

// redactor hides, in texts shown to one caller (reasons and check
// details), the namespaces that caller may not read and the jobs in them:
// the engine's reasons name other jobs ("waiting behind ns/id",
// "preempting ns/a, ns/b", "preempted by ns/id") and tenants ("tenant ns
// reclaims ...").
type redactor struct{ hidden []string }

// redactorFor lists the namespaces Nomad has that c may not read.
func (s *Server) redactorFor(c *auth.Caller) redactor {
	var rd redactor
	if c.Management() {
		return rd
	}
	for _, ns := range s.Store.Namespaces() {
		if !c.CanRead(ns) {
			rd.hidden = append(rd.hidden, ns)
		}
	}
	return rd
}

// text redacts t.
func (rd redactor) text(t string) string {
	for _, ns := range rd.hidden {
		if !strings.Contains(t, ns) {
			continue
		}
		t = replaceJobs(t, ns)
		t = replaceWord(t, "tenant "+ns, "tenant "+hiddenName)
		t = replaceWord(t, "namespace "+ns, "namespace "+hiddenName)
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
		b.WriteString(hiddenName)
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
