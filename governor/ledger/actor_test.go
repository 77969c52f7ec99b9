package ledger

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/auth"
)

// TestActorOf: how the audit log names a caller (the auditor of namespace
// changes, the console's job release).
func TestActorOf(t *testing.T) {
	cases := map[string]struct {
		caller           *auth.Caller
		wantID, wantName string
	}{
		"token":        {caller: auth.NewCaller("acc-1", "alice", nil), wantID: "acc-1", wantName: "alice"},
		"no accessor":  {caller: &auth.Caller{Name: "anon", Type: auth.TypeAnonymous}, wantID: "anonymous", wantName: "anon"},
		"acl disabled": {caller: auth.Unrestricted(), wantID: "acl-disabled", wantName: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id, n := ActorOf(tc.caller)
			must.Eq(t, tc.wantID, id)
			must.Eq(t, tc.wantName, n)
		})
	}
}
