package ledger

import (
	"encoding/csv"
	"io"
	"strconv"
)

// WriteCSV writes header and rows as CSV, each cell through CSVCell. It is
// the one CSV writer of every report: `allotctl report … -csv`,
// `allotctl audit -csv` and the console's usage export.
func WriteCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	for _, r := range append([][]string{header}, rows...) {
		safe := make([]string, len(r))
		for i, cell := range r {
			safe[i] = CSVCell(cell)
		}
		if err := cw.Write(safe); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVCell neutralises a cell a spreadsheet would read as a formula (CSV
// injection): one that starts with '=', '+', '-', '@', a tab or a carriage
// return gets a single quote in front, as OWASP recommends. Numbers
// ("-1.5", "+2") and a lone "-" (the tables' empty mark) stay as they are.
// Job and namespace names are the tenants' own, so any cell may be hostile.
func CSVCell(s string) string {
	if s == "" || s == "-" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
	default:
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && isNumeral(s) {
		return s
	}
	return "'" + s
}

// isNumeral reports whether s is written only with a sign, digits, a point
// and an exponent: ParseFloat also reads "-Inf" and hex floats, which a
// spreadsheet reads as text.
func isNumeral(s string) bool {
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r == '+', r == '-', r == '.', r == 'e', r == 'E':
		default:
			return false
		}
	}
	return true
}
