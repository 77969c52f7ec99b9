package ledger

import (
	"context"
	"fmt"
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
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out := serve(t, a, ReportAudit, tc.query, tc.caller)
			must.Eq(t, 200, code)
			must.Eq(t, tc.want, subjects(out))
		})
	}
	for _, bad := range []string{"?limit=0", "?limit=-3", "?limit=ten"} {
		code, out := serve(t, a, ReportAudit, bad, mgmt)
		must.Eq(t, 400, code)
		must.StrContains(t, out["error"].(string), "not a positive number")
	}
}
