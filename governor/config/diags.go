package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// fileErrors is the error of a config file HCL cannot decode: every
// diagnostic, in file order, each with its file:line,col. hcl.Diagnostics'
// own Error() shows only the first one, and which one comes first depends
// on map order inside the decoder (FuzzLoadFile found the same file giving
// two different messages).
type fileErrors struct {
	diags hcl.Diagnostics
	// names holds, per diagnostic, the setting whose value it is about
	// ("fair_share_gap", "nomad.token"); "" when none is.
	names []string
}

// fileError turns a decoding error of the file src into a fileErrors when
// it carries HCL diagnostics; other errors are returned as they are.
func fileError(err error, src []byte) error {
	var diags hcl.Diagnostics
	if !errors.As(err, &diags) {
		return err
	}
	sorted := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(sorted, func(i, j int) bool { return diagKey(sorted[i]) < diagKey(sorted[j]) })
	e := &fileErrors{diags: sorted, names: make([]string, len(sorted))}
	if len(sorted) > 0 && sorted[0].Subject != nil {
		attrs := settingRanges(src, sorted[0].Subject.Filename)
		for i, d := range sorted {
			e.names[i] = settingAt(attrs, d.Subject)
		}
	}
	return e
}

// setting is an attribute of the file: its dotted name (block types and
// labels before it) and the range of its value.
type setting struct {
	name  string
	value hcl.Range
}

// settingRanges lists the file's attributes, in blocks too; none when it
// does not parse (its diagnostics then say where).
func settingRanges(src []byte, filename string) []setting {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() || f == nil {
		return nil
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []setting
	var walk func(b *hclsyntax.Body, prefix string)
	walk = func(b *hclsyntax.Body, prefix string) {
		for name, a := range b.Attributes {
			out = append(out, setting{name: prefix + name, value: a.Expr.Range()})
		}
		for _, blk := range b.Blocks {
			walk(blk.Body, prefix+strings.Join(append([]string{blk.Type}, blk.Labels...), ".")+".")
		}
	}
	walk(body, "")
	return out
}

// settingAt names the setting whose value holds r; "" when none does.
func settingAt(attrs []setting, r *hcl.Range) string {
	if r == nil {
		return ""
	}
	for _, a := range attrs {
		if a.value.Filename == r.Filename && a.value.ContainsOffset(r.Start.Byte) {
			return a.name
		}
	}
	return ""
}

// diagKey orders diagnostics by position, then text.
func diagKey(d *hcl.Diagnostic) string {
	if d.Subject == nil {
		return fmt.Sprintf("~%s %s", d.Summary, d.Detail)
	}
	return fmt.Sprintf("%s %09d %09d %s %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail)
}

func (e *fileErrors) Error() string {
	msgs := make([]string, 0, len(e.diags))
	for i, d := range e.diags {
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if i < len(e.names) && e.names[i] != "" {
			msg = e.names[i] + ": " + msg
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d,%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		msgs = append(msgs, msg)
	}
	return strings.Join(msgs, "\n")
}

// Unwrap gives the diagnostics, so errors.As finds hcl.Diagnostics.
func (e *fileErrors) Unwrap() error { return e.diags }
