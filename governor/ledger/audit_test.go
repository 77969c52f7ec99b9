package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/reconcile"
)

func TestAuditChainDetectsTampering(t *testing.T) {
	cases := map[string]struct {
		tamper string
		want   string
	}{
		"changed value": {tamper: `UPDATE audit SET new_value = 'allot.quota.gpu="99"' WHERE seq = 2`, want: "entry 2 was changed"},
		"changed actor": {tamper: `UPDATE audit SET actor = 'someone-else' WHERE seq = 1`, want: "entry 1 was changed"},
		"deleted row":   {tamper: `DELETE FROM audit WHERE seq = 2`, want: "entry 3 follows entry 1"},
		"rehashed row":  {tamper: `UPDATE audit SET hash = 'x', new_value = 'y' WHERE seq = 2`, want: "entry 2 was changed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, db *DB) {
				ctx := context.Background()
				for i := 0; i < 3; i++ {
					must.NoError(t, db.Append(ctx, Entry{Time: at(i), Kind: KindNamespaceMeta, Actor: "acc", Namespace: "ml",
						New: "allot.quota.gpu=\"4\"\n"}))
				}
				n, err := db.Verify(ctx)
				must.NoError(t, err)
				must.Eq(t, 3, n)
				_, err = db.SQL().Exec(tc.tamper)
				must.NoError(t, err)
				_, err = db.Verify(ctx)
				must.ErrorIs(t, err, ErrTampered)
				must.ErrorContains(t, err, tc.want)
			})
		})
	}
}

// fakeNomad serves namespaces (and, for the recorder, nodes/allocations).
type fakeNomad struct {
	namespaces []*api.Namespace
	nodes      []*api.NodeListStub
	allocs     []*api.AllocationListStub
	index      uint64
	blocked    []*api.Evaluation
}

func (f *fakeNomad) Allocations(ctx context.Context, filter string, wi uint64, w time.Duration) ([]*api.AllocationListStub, uint64, error) {
	return f.allocs, f.index, nil
}
func (f *fakeNomad) Blocked(context.Context) ([]*api.Evaluation, error) { return f.blocked, nil }
func (f *fakeNomad) Nodes(context.Context) ([]*api.NodeListStub, error) { return f.nodes, nil }
func (f *fakeNomad) Namespaces(context.Context) ([]*api.Namespace, error) {
	return f.namespaces, nil
}

type fakeAuth struct{}

func (fakeAuth) Authenticate(r *http.Request) (*auth.Caller, error) {
	return &auth.Caller{AccessorID: "acc-" + auth.Token(r), Name: "alice"}, nil
}

// TestAuditorActors: a write through the proxy is recorded with its
// actor and not again by detection; a change made straight to Nomad is
// detected with actor unknown.
func TestAuditorActors(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		nomad := &fakeNomad{namespaces: []*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "2", "owner": "x"}}}}
		a := &Auditor{DB: db, Auth: fakeAuth{}, Now: func() time.Time { return at(5) }}
		must.NoError(t, a.Detect(ctx, nomad))
		must.NoError(t, a.Detect(ctx, nomad)) // nothing new
		// The proxy: Nomad (the next handler) accepts and stores the write.
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var ns api.Namespace
			must.NoError(t, json.NewDecoder(r.Body).Decode(&ns))
			nomad.namespaces = []*api.Namespace{&ns}
		})
		body, _ := json.Marshal(api.Namespace{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "4", "owner": "x"}})
		req := httptest.NewRequest(http.MethodPut, "/v1/namespace/ml", bytes.NewReader(body))
		req.Header.Set("X-Nomad-Token", "s3cret")
		a.Wrap(next).ServeHTTP(httptest.NewRecorder(), req)
		must.NoError(t, a.Detect(ctx, nomad))
		// Straight to Nomad: only detection sees it; non-allot keys are not governance.
		nomad.namespaces = []*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "8", "owner": "y"}}}
		must.NoError(t, a.Detect(ctx, nomad))
		es, err := db.Entries(ctx, AuditQuery{Kind: KindNamespaceMeta})
		must.NoError(t, err)
		must.Len(t, 3, es)
		must.Eq(t, ActorUnknown, es[0].Actor)
		must.StrContains(t, es[0].Detail, "first seen")
		must.Eq(t, "acc-s3cret", es[1].Actor)
		must.Eq(t, "alice", es[1].ActorName)
		must.Eq(t, "allot.quota.gpu=\"2\"\n", es[1].Old)
		must.Eq(t, "allot.quota.gpu=\"4\"\n", es[1].New)
		must.Eq(t, "allot.quota.gpu", es[1].Subject)
		must.Eq(t, ActorUnknown, es[2].Actor)
		must.Eq(t, "allot.quota.gpu=\"8\"\n", es[2].New)
		_, err = db.Verify(ctx)
		must.NoError(t, err)
	})
}

// TestPersistDecisions: polling the same journal again persists nothing
// twice; a newer decision is appended.
func TestPersistDecisions(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		j := []reconcile.Record{{Time: at(2), Kind: "preemption", Namespace: "ml", JobID: "big", Cause: "reclaim"},
			{Time: at(1), Kind: "hold", Namespace: "cv", JobID: "x", Cause: "over-limit"}}
		must.NoError(t, db.PersistDecisions(ctx, FromJournal(j)))
		must.NoError(t, db.PersistDecisions(ctx, FromJournal(j)))
		j = append([]reconcile.Record{{Time: at(3), Kind: "requeue", Namespace: "ml", JobID: "y"}}, j...)
		must.NoError(t, db.PersistDecisions(ctx, FromJournal(j)))
		es, err := db.Entries(ctx, AuditQuery{Kind: KindDecision})
		must.NoError(t, err)
		must.Len(t, 3, es)
		must.Eq(t, "decision:hold", es[0].Kind)
		must.Eq(t, "decision:preemption", es[1].Kind)
		must.Eq(t, "decision:requeue", es[2].Kind)
		only, err := db.Entries(ctx, AuditQuery{Namespaces: []string{"cv"}})
		must.NoError(t, err)
		must.Len(t, 1, only)
	})
}
