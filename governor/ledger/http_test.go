package ledger

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"
)

func serve(t *testing.T, a *API, kind, query string, c Caller) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Serve(kind, rec, httptest.NewRequest(http.MethodGet, "/allot/v1/"+kind+query, nil), c)
	var out map[string]any
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return rec.Code, out
}

func TestAPIErrorsAndRedaction(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	must.NoError(t, db.PersistDecisions(ctx, []Decision{{Time: at(1), Kind: "preemption", Namespace: "ml", JobID: "big",
		Detail: `{"victims":[{"Namespace":"cv","JobID":"secret"}]}`}}))
	a := &API{DB: db}
	tenant := Caller{Namespaces: []string{"ml"}}
	cases := map[string]struct {
		kind, query string
		caller      Caller
		code        int
		errText     string
	}{
		"bad since":           {kind: ReportUsage, query: "?since=yesterday", caller: tenant, code: 400, errText: "neither RFC 3339"},
		"bad by":              {kind: ReportCost, query: "?by=color", caller: tenant, code: 400, errText: "cannot group by"},
		"window backwards":    {kind: ReportCapacity, query: "?since=200&until=100", caller: tenant, code: 400, errText: "is not before"},
		"verify needs mgmt":   {kind: ReportAudit, query: "?verify=true", caller: tenant, code: 400, errText: "management token"},
		"unknown report":      {kind: "bill", caller: tenant, code: 400, errText: "unknown report"},
		"since min int64":     {kind: ReportUsage, query: "?since=-9223372036854775808", caller: tenant, code: 400, errText: "outside years 0–9999"},
		"until max int64":     {kind: ReportCost, query: "?until=9223372036854775807", caller: tenant, code: 400, errText: "outside years 0–9999"},
		"until year 10000":    {kind: ReportCapacity, query: "?until=253402300800", caller: tenant, code: 400, errText: "outside years 0–9999"},
		"since year -1":       {kind: ReportAudit, query: "?since=0000-01-01T00:00:00%2B01:00", caller: tenant, code: 400, errText: "outside years 0–9999"},
		"since garbage":       {kind: ReportAudit, query: "?since=%00%FF", caller: tenant, code: 400, errText: "neither RFC 3339"},
		"until last second":   {kind: ReportUsage, query: "?since=0&until=253402300799", caller: tenant, code: 200},
		"usage ok":            {kind: ReportUsage, query: "?since=0&by=tenant,model", caller: tenant, code: 200},
		"management verifies": {kind: ReportAudit, query: "?verify=1", caller: Caller{Management: true}, code: 200},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out := serve(t, a, tc.kind, tc.query, tc.caller)
			must.Eq(t, tc.code, code)
			if tc.errText != "" {
				must.StrContains(t, out["error"].(string), tc.errText)
			}
		})
	}
	_, out := serve(t, a, ReportAudit, "", tenant)
	entries := out["entries"].([]any)
	must.Len(t, 1, entries)
	must.Eq(t, "(redacted)", entries[0].(map[string]any)["detail"])
	_, out = serve(t, a, ReportAudit, "", Caller{Management: true})
	must.StrContains(t, out["entries"].([]any)[0].(map[string]any)["detail"].(string), "secret")
}
