package layers

import (
	"fmt"
	"sort"
	"strings"
)

// Package is what the check needs to know of one package: its path relative
// to Module and the module packages its non-test files import.
type Package struct {
	Path    string
	Imports []string
}

// Violation is one import a rule forbids.
type Violation struct {
	From, Import string
	Rule         Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %s: not allowed by rule %q (%s)", v.From, v.Import, v.Rule.From, v.Rule.Why)
}

// Check returns every import of pkgs that the rules forbid, sorted. A
// package no rule covers is a violation of its own (rule From "?"), so a new
// top-level directory needs a line in the table.
func Check(rules []Rule, pkgs []Package) []Violation {
	var out []Violation
	for _, p := range pkgs {
		rule, ok := ruleFor(rules, p.Path)
		if !ok {
			out = append(out, Violation{From: p.Path, Import: "(any)", Rule: Rule{From: "?", Why: "no rule covers this package"}})
			continue
		}
		for _, imp := range p.Imports {
			if imp != p.Path && !matchesAny(rule.Allow, imp) {
				out = append(out, Violation{From: p.Path, Import: imp, Rule: rule})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ruleFor returns the most specific rule that matches path: the longest
// From, an exact path before a tree of the same path.
func ruleFor(rules []Rule, path string) (Rule, bool) {
	best, found := Rule{}, false
	for _, r := range rules {
		if match(r.From, path) && (!found || specificity(r.From) > specificity(best.From)) {
			best, found = r, true
		}
	}
	return best, found
}

func specificity(pattern string) int {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return 2 * len(base)
	}
	return 2*len(pattern) + 1
}

func matchesAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// match reports whether path matches pattern ("a/b" or "a/b/...").
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}
