package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// fileErrors is the error of a config file HCL cannot decode: every
// diagnostic, in file order, each with its file:line,col. hcl.Diagnostics'
// own Error() shows only the first one, and which one comes first depends
// on map order inside the decoder (FuzzLoadFile found the same file giving
// two different messages).
type fileErrors struct {
	diags hcl.Diagnostics
}

// fileError turns a decoding error into a fileErrors when it carries HCL
// diagnostics; other errors are returned as they are.
func fileError(err error) error {
	var diags hcl.Diagnostics
	if !errors.As(err, &diags) {
		return err
	}
	sorted := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(sorted, func(i, j int) bool { return diagKey(sorted[i]) < diagKey(sorted[j]) })
	return &fileErrors{diags: sorted}
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
	for _, d := range e.diags {
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
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
