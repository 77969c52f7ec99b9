package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/acl"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/reconcile"
)

// requeueAuth: "ml-write" may submit jobs in ml (with an accessor ID),
// "ml-read" and "secret-write" may only read ml / submit in secret, "root"
// is management, no token is anonymous without a policy.
type requeueAuth struct{ t *testing.T }

func (f requeueAuth) Authenticate(r *http.Request) (*auth.Caller, error) {
	rules := map[string]string{
		"ml-write":     `namespace "ml" { policy = "write" }`,
		"ml-read":      `namespace "ml" { policy = "read" }`,
		"secret-write": `namespace "secret" { policy = "write" }`,
		"":             ``,
	}
	secret := auth.Token(r)
	if secret == "root" {
		return auth.NewCaller("root-accessor", "root", acl.ManagementACL), nil
	}
	rule, ok := rules[secret]
	if !ok {
		return nil, auth.ErrTokenNotFound
	}
	p, err := acl.Parse(rule)
	must.NoError(f.t, err)
	a, err := acl.NewACL(false, []*acl.Policy{p})
	must.NoError(f.t, err)
	accessor := ""
	if secret != "" {
		accessor = secret + "-accessor"
	}
	return auth.NewCaller(accessor, secret, a), nil
}

// fakeApplier records the decisions it is asked to apply.
type fakeApplier struct {
	got     []engine.Decision
	changed bool
	err     error
}

func (f *fakeApplier) ApplyOne(_ context.Context, d engine.Decision) (bool, error) {
	f.got = append(f.got, d)
	return f.changed, f.err
}

// requeueServer serves a store with ml/train running (version 7), ml/held
// queued, ml/done finished and secret/x running; mod adjusts it.
func requeueServer(t *testing.T, mod func(*Server)) (*Server, *httptest.Server, *fakeApplier) {
	fa := &fakeApplier{changed: true}
	s, srv := testServer(t, samplePlan(), true, func(s *Server) {
		s.Auth = requeueAuth{t}
		s.Actuator = fa
		s.Journal = &reconcile.Journal{}
		if mod != nil {
			mod(s)
		}
	})
	// A finished job, as Nomad lists it (a job nobody admitted: direct).
	s.Store.Reset(&cluster.Initial{Jobs: []*api.Job{{ID: pointer("done"), Namespace: pointer("ml"), Type: pointer("batch"),
		Status: pointer("dead"), JobModifyIndex: pointer(uint64(4))}}})
	for _, j := range []*engine.Job{
		{Namespace: "ml", ID: "train", Class: "standard", Priority: 50, State: engine.Admitted, Version: 7},
		{Namespace: "ml", ID: "held", State: engine.Queued, Version: 3},
		{Namespace: "ml", ID: "child", State: engine.Admitted, Dispatched: true, Version: 5},
		{Namespace: "ml", ID: "a/b", State: engine.Direct, Version: 9},
		{Namespace: "secret", ID: "x", State: engine.Admitted, Version: 2},
	} {
		s.Store.PutEngineJob(j)
	}
	return s, srv, fa
}

func requeueAs(t *testing.T, srv *httptest.Server, token, ns, id, reason string) (*allotapi.RequeueResult, error) {
	c := &allotapi.Client{Address: srv.URL, Token: token}
	return c.Requeue(context.Background(), ns, id, reason)
}

func TestRequeueRefusals(t *testing.T) {
	tests := map[string]struct {
		token, ns, id string
		status        int
		msg           string
	}{
		"a tenant token on another namespace": {token: "secret-write", ns: "ml", id: "train", status: http.StatusForbidden,
			msg: `needs the submit-job capability in namespace "ml"`},
		"read-only in the namespace": {token: "ml-read", ns: "ml", id: "train", status: http.StatusForbidden, msg: "submit-job"},
		"anonymous":                  {token: "", ns: "ml", id: "train", status: http.StatusForbidden, msg: "submit-job"},
		"unknown token":              {token: "nobody", ns: "ml", id: "train", status: http.StatusForbidden, msg: "ACL token not found"},
		"hidden namespace, unknown job": {token: "ml-write", ns: "secret", id: "nope", status: http.StatusForbidden,
			msg: `namespace "secret"`},
		"unknown job":       {token: "ml-write", ns: "ml", id: "nope", status: http.StatusNotFound, msg: `job "nope" not found in namespace "ml"`},
		"queued":            {token: "ml-write", ns: "ml", id: "held", status: http.StatusConflict, msg: "not running: it is already queued"},
		"finished":          {token: "ml-write", ns: "ml", id: "done", status: http.StatusConflict, msg: "not running (finished)"},
		"dispatched":        {token: "ml-write", ns: "ml", id: "child", status: http.StatusConflict, msg: "dispatched job"},
		"unknown namespace": {token: "root", ns: "other", id: "j", status: http.StatusNotFound, msg: "not found"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, srv, fa := requeueServer(t, nil)
			_, err := requeueAs(t, srv, tc.token, tc.ns, tc.id, "")
			var se *allotapi.StatusError
			must.True(t, errors.As(err, &se), must.Sprintf("error %v", err))
			must.Eq(t, tc.status, se.Status)
			must.StrContains(t, se.Msg, tc.msg)
			must.SliceEmpty(t, fa.got, must.Sprint("nothing reaches the actuator"))
		})
	}
}

func TestRequeueOfAJobOutsideTheGovernedNamespaces(t *testing.T) {
	s, srv, fa := requeueServer(t, nil)
	s.Store.PutEngineJob(&engine.Job{Namespace: "plain", ID: "j", State: engine.Direct, Version: 1})
	_, err := requeueAs(t, srv, "root", "plain", "j", "")
	must.True(t, allotapi.IsStatus(err, http.StatusConflict), must.Sprintf("error %v", err))
	must.StrContains(t, err.Error(), "not governed")
	must.SliceEmpty(t, fa.got)
}

func TestRequeueReachesTheActuator(t *testing.T) {
	s, srv, fa := requeueServer(t, nil)
	res, err := requeueAs(t, srv, "ml-write", "ml", "train", "  free the node for maintenance ")
	must.NoError(t, err)
	must.Eq(t, []engine.Decision{{Action: engine.Requeue, Namespace: "ml", JobID: "train", Version: 7, Class: "standard",
		Priority: 50, Cause: CauseManual, Reason: "requeued by ml-write (ml-write-accessor): free the node for maintenance"}}, fa.got)
	must.Eq(t, allotapi.RequeueResult{Namespace: "ml", JobID: "train", State: "queued", Actor: "ml-write-accessor",
		ActorName: "ml-write", Reason: "requeued by ml-write (ml-write-accessor): free the node for maintenance",
		AuditError: errNoAuditLog.Error()}, *res)

	recs := s.Journal.Recent()
	must.SliceLen(t, 1, recs)
	must.Eq(t, "requeue", recs[0].Kind)
	must.Eq(t, CauseManual, recs[0].Cause)
	must.Eq(t, "ml/train", recs[0].Namespace+"/"+recs[0].JobID)
	ds, err := (&allotapi.Client{Address: srv.URL, Token: "ml-read"}).Decisions(context.Background())
	must.NoError(t, err)
	must.SliceLen(t, 1, ds.Decisions)
	must.Eq(t, "requeued by ml-write (ml-write-accessor): free the node for maintenance", ds.Decisions[0].Reason)

	// A job ID with a slash, no body at all.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/allot/v1/jobs/ml/a%2Fb/requeue", nil)
	must.NoError(t, err)
	req.Header.Set("X-Nomad-Token", "root")
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.Eq(t, "a/b", fa.got[1].JobID)
	must.Eq(t, "requeued by root (root-accessor)", fa.got[1].Reason)
}

func TestRequeueIsAudited(t *testing.T) {
	db, err := ledger.Open(context.Background(), ledger.DriverSQLite, filepath.Join(t.TempDir(), "ledger.db"))
	must.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, srv, _ := requeueServer(t, func(s *Server) { s.Ledger = &ledger.API{DB: db} })
	res, err := requeueAs(t, srv, "ml-write", "ml", "train", "rebalance")
	must.NoError(t, err)
	must.True(t, res.Audited)
	es, err := db.Entries(context.Background(), ledger.AuditQuery{Kind: KindJobRequeue})
	must.NoError(t, err)
	must.SliceLen(t, 1, es)
	must.Eq(t, "ml-write-accessor", es[0].Actor)
	must.Eq(t, "ml-write", es[0].ActorName)
	must.Eq(t, "ml", es[0].Namespace)
	must.Eq(t, "train", es[0].Subject)
	must.StrContains(t, es[0].Detail, "rebalance")
}

func TestRequeueActuatorOutcomes(t *testing.T) {
	tests := map[string]struct {
		changed    bool
		err        error
		status     int
		msg        string
		retryAfter bool
	}{
		"already queued": {status: http.StatusConflict, msg: "already queued"},
		"conflict":       {err: fmt.Errorf("%w: moved", actuate.ErrConflict), status: http.StatusConflict, msg: "changed or stopped running meanwhile"},
		"gone":           {err: actuate.ErrGone, status: http.StatusNotFound, msg: "no longer exists"},
		"lost the lead":  {err: actuate.ErrNotLeader, status: http.StatusServiceUnavailable, msg: "lost the lead", retryAfter: true},
		"nomad fails":    {err: errors.New("connection refused"), status: http.StatusBadGateway, msg: "connection refused"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, srv, fa := requeueServer(t, nil)
			fa.changed, fa.err = tc.changed, tc.err
			_, err := requeueAs(t, srv, "ml-write", "ml", "train", "")
			var se *allotapi.StatusError
			must.True(t, errors.As(err, &se), must.Sprintf("error %v", err))
			must.Eq(t, tc.status, se.Status)
			must.StrContains(t, se.Msg, tc.msg)
			must.Eq(t, tc.retryAfter, se.RetryAfter != "")
			must.SliceLen(t, 1, fa.got)
			must.SliceEmpty(t, s.Journal.Recent(), must.Sprint("nothing recorded"))
		})
	}
}

func TestRequeueOnAStandby(t *testing.T) {
	tests := map[string]struct {
		leader *allotapi.Member
		msg    string
	}{
		"leader known": {leader: &allotapi.Member{ID: "g1", URL: "https://g1:4680"}, msg: "only the leader g1 (https://g1:4680)"},
		"no leader":    {msg: "no governor leads now"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, srv, fa := requeueServer(t, func(s *Server) {
				s.HA = fakeHA{st: allotapi.Status{HA: true, Member: "g2", Leader: tc.leader}}
			})
			_, err := requeueAs(t, srv, "ml-write", "ml", "train", "")
			var se *allotapi.StatusError
			must.True(t, errors.As(err, &se), must.Sprintf("error %v", err))
			must.Eq(t, http.StatusServiceUnavailable, se.Status)
			must.Eq(t, "1", se.RetryAfter)
			must.StrContains(t, se.Msg, tc.msg)
			must.SliceEmpty(t, fa.got, must.Sprint("a standby writes nothing"))
		})
	}
	_, srv, fa := requeueServer(t, func(s *Server) { s.HA = fakeHA{st: allotapi.Status{HA: true, Leading: true}} })
	_, err := requeueAs(t, srv, "ml-write", "ml", "train", "")
	must.NoError(t, err)
	must.SliceLen(t, 1, fa.got)
}

// forwardingProxy stands in for the proxy on a standby: it answers every
// forwarded request itself, as the leader would.
type forwardingProxy struct {
	http.Handler
	got []string
}

func (f *forwardingProxy) ForwardToLeader(w http.ResponseWriter, r *http.Request) bool {
	f.got = append(f.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Nomad-Token"))
	allotapi.WriteJSON(w, http.StatusOK, allotapi.RequeueResult{Namespace: "ml", JobID: "train", State: "queued", Actor: "from-leader"})
	return true
}

func TestRequeueOnAStandbyIsForwardedToTheLeader(t *testing.T) {
	fp := &forwardingProxy{Handler: http.NotFoundHandler()}
	_, srv, fa := requeueServer(t, func(s *Server) {
		s.Proxy = fp
		s.HA = fakeHA{st: allotapi.Status{HA: true, Member: "g2", Leader: &allotapi.Member{ID: "g1"}}}
	})
	res, err := requeueAs(t, srv, "ml-write", "ml", "train", "")
	must.NoError(t, err)
	must.Eq(t, "from-leader", res.Actor)
	must.Eq(t, []string{"POST /allot/v1/jobs/ml/train/requeue ml-write"}, fp.got)
	must.SliceEmpty(t, fa.got, must.Sprint("the standby applies nothing itself"))
}

func TestRequeueRequestShape(t *testing.T) {
	_, srv, fa := requeueServer(t, nil)
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		must.NoError(t, err)
		req.Header.Set("X-Nomad-Token", "ml-write")
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.Header.Get("Allow"))
		return resp.StatusCode, b.String()
	}
	code, allow := do(http.MethodGet, "/allot/v1/jobs/ml/train/requeue", "")
	must.Eq(t, http.StatusMethodNotAllowed, code)
	must.Eq(t, http.MethodPost, allow)
	code, _ = do(http.MethodPost, "/allot/v1/jobs/ml/train/requeue", "{not json")
	must.Eq(t, http.StatusBadRequest, code)
	code, _ = do(http.MethodPost, "/allot/v1/jobs/ml/requeue", "")
	must.Eq(t, http.StatusNotFound, code)
	code, _ = do(http.MethodPost, "/allot/v1/jobs/ml/train/requeue", strings.Repeat("x", maxRequeueBody+1))
	must.Eq(t, http.StatusBadRequest, code)
	// A reason over MaxRequeueReason characters (well under the body's
	// bound) is refused before anything is requeued or recorded.
	code, _ = do(http.MethodPost, "/allot/v1/jobs/ml/train/requeue",
		`{"reason":"`+strings.Repeat("é", allotapi.MaxRequeueReason+1)+`"}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.SliceEmpty(t, fa.got)
	// why still answers GET under the same prefix, and only GET.
	code, _ = do(http.MethodPost, "/allot/v1/jobs/ml/train/why", "")
	must.Eq(t, http.StatusMethodNotAllowed, code)
}

func pointer[T any](v T) *T { return &v }
