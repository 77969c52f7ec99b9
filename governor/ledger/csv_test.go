package ledger

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/shoenig/test/must"
)

// TestCSVCell: cells a spreadsheet would run as formulas get a quote in
// front; numbers and ordinary text are unchanged.
func TestCSVCell(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"formula":         {in: "=HYPERLINK(\"http://x\",\"y\")", want: "'=HYPERLINK(\"http://x\",\"y\")"},
		"dde":             {in: "=cmd|' /C calc'!A0", want: "'=cmd|' /C calc'!A0"},
		"plus":            {in: "+1+cmd|' /C calc'!A0", want: "'+1+cmd|' /C calc'!A0"},
		"minus":           {in: "-2+3", want: "'-2+3"},
		"at":              {in: "@SUM(A1:A9)", want: "'@SUM(A1:A9)"},
		"tab":             {in: "\t=1", want: "'\t=1"},
		"carriage return": {in: "\r=1", want: "'\r=1"},
		"minus inf":       {in: "-Inf", want: "'-Inf"},
		"hex float":       {in: "-0x1p-2", want: "'-0x1p-2"},
		"negative cost":   {in: "-1.5", want: "-1.5"},
		"signed":          {in: "+2", want: "+2"},
		"exponent":        {in: "-1e3", want: "-1e3"},
		"empty mark":      {in: "-", want: "-"},
		"empty":           {in: "", want: ""},
		"plain":           {in: "team-a", want: "team-a"},
		"inner equals":    {in: "a=b", want: "a=b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, CSVCell(tc.in))
		})
	}
}

// TestWriteCSVHostileNames: a usage table with tenant-chosen hostile job
// and namespace names comes out neutralised, numbers untouched, and
// reads back as the same number of cells per row.
func TestWriteCSVHostileNames(t *testing.T) {
	header, rows := UsageTable(UsageAnswer{By: []string{"job"}, Rows: []Usage{
		{Key: map[string]string{"tenant": "=1+1", "job": "@evil"}, Allocations: 1, DeviceMS: 3_600_000},
		{Key: map[string]string{"tenant": "ml", "job": "-2+3\r"}, Allocations: 2},
	}})
	var buf bytes.Buffer
	must.NoError(t, WriteCSV(&buf, header, rows))
	got, err := csv.NewReader(&buf).ReadAll()
	must.NoError(t, err)
	must.Len(t, 3, got)
	must.Eq(t, []string{"Tenant", "Job", "Allocs", "Device-h"}, got[0][:4])
	must.Eq(t, []string{"'=1+1", "'@evil", "1", "1.000"}, got[1][:4])
	must.Eq(t, []string{"ml", "'-2+3\r", "2", "0.000"}, got[2][:4])
}
