package ledger

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// TestAuditNamespaceAndLimit: ?namespace= keeps one namespace within the
// caller's, ?limit= the newest n entries, oldest first.
func TestAuditNamespaceAndLimit(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		ns := []string{"ml", "cv"}[i%2]
		must.NoError(t, db.Append(ctx, Entry{Time: at(i), Kind: KindNamespaceMeta, Actor: "a", Namespace: ns,
			Subject: fmt.Sprint(i)}))
	}
	a := &API{DB: db}
	subjects := func(out map[string]any) []string {
		var s []string
		for _, e := range out["entries"].([]any) {
			s = append(s, e.(map[string]any)["subject"].(string))
		}
		return s
	}
	mgmt, ml := Caller{Management: true}, Caller{Namespaces: []string{"ml"}}
	cases := map[string]struct {
		query  string
		caller Caller
		want   []string
	}{
		"all":                         {caller: mgmt, want: []string{"0", "1", "2", "3", "4", "5"}},
		"newest two":                  {query: "?limit=2", caller: mgmt, want: []string{"4", "5"}},
		"one namespace":               {query: "?namespace=cv", caller: mgmt, want: []string{"1", "3", "5"}},
		"newest two of one namespace": {query: "?namespace=ml&limit=2", caller: mgmt, want: []string{"2", "4"}},
		"tenant, its own":             {query: "?namespace=ml", caller: ml, want: []string{"0", "2", "4"}},
		"tenant, another is nothing":  {query: "?namespace=cv", caller: ml, want: nil},
		"limit above the count":       {query: "?limit=100", caller: ml, want: []string{"0", "2", "4"}},
		// Hostile values: matched as one name, never as SQL or a pattern;
		// a repeated namespace is its first value, still within the caller's.
		"largest limit":                {query: "?limit=9223372036854775807", caller: ml, want: []string{"0", "2", "4"}},
		"SQL in the namespace":         {query: "?namespace=ml%27%20OR%20%271%27%3D%271", caller: mgmt, want: nil},
		"a pattern as the namespace":   {query: "?namespace=%25", caller: mgmt, want: nil},
		"tenant, its own then another": {query: "?namespace=ml&namespace=cv", caller: ml, want: []string{"0", "2", "4"}},
		"tenant, another then its own": {query: "?namespace=cv&namespace=ml", caller: ml, want: nil},
		"tenant, a huge namespace":     {query: "?namespace=" + strings.Repeat("m", 1<<16), caller: ml, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out := serve(t, a, ReportAudit, tc.query, tc.caller)
			must.Eq(t, 200, code)
			must.Eq(t, tc.want, subjects(out))
		})
	}
	for _, bad := range []string{"?limit=0", "?limit=-3", "?limit=ten", "?limit=99999999999999999999", "?limit=1.5", "?limit=0x10", "?limit=%202"} {
		code, out := serve(t, a, ReportAudit, bad, mgmt)
		must.Eq(t, 400, code)
		must.StrContains(t, out["error"].(string), "not a positive number")
	}
}
