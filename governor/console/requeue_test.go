package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/reconcile"
	"github.com/allot-sh/allot/governor/server"
)

// recordingApplier stands in for the governor's actuator: it records the
// decisions the API applies.
type recordingApplier struct {
	mu  sync.Mutex
	got []engine.Decision
}

func (a *recordingApplier) ApplyOne(_ context.Context, d engine.Decision) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, d)
	return true, nil
}

func (a *recordingApplier) decisions() []engine.Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]engine.Decision(nil), a.got...)
}

// withRunningJob puts ml/running in the store as an admitted job (and
// ml/held as a queued one) and
// makes the fake Nomad report it running; the API's requeue goes to
// applier.
func withRunningJob(applier server.Applier) func(*server.Server) {
	return func(s *server.Server) {
		s.Store.PutEngineJob(&engine.Job{Namespace: "ml", ID: "running", Class: "standard", Priority: 50,
			State: engine.Admitted, Version: 5})
		s.Store.PutEngineJob(&engine.Job{Namespace: "ml", ID: "held", Class: "low", State: engine.Queued, Version: 3})
		s.Actuator, s.Journal = applier, &reconcile.Journal{}
		nomad := s.Proxy
		s.Proxy = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/v1/job/running" && r.URL.Query().Get("namespace") == "ml" {
				_, _ = w.Write([]byte(`{"ID":"running","Namespace":"ml","Status":"running","Stop":false}`))
				return
			}
			nomad.ServeHTTP(w, r)
		})
	}
}

func TestRequeueFromTheJobPage(t *testing.T) {
	var db *ledger.DB
	applier := &recordingApplier{}
	srv, _ := newGovernor(t, testPlan(), false, false, withLedger(t, &db), withRunningJob(applier))
	ctx := context.Background()

	// A read-only token: no form; a forged POST is refused by the API
	// (403 shown as it came), nothing reaches the actuator or the log.
	ro := newBrowser(t, srv)
	token := ro.signIn("ml")
	status, body, _ := ro.get("/ui/jobs/ml/running")
	must.Eq(t, http.StatusOK, status)
	must.StrNotContains(t, withoutTokens(body), `action="/ui/requeue/`)
	status, body, _ = ro.post("/ui/requeue/ml/running", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusForbidden, status)
	must.StrContains(t, body, "The governor refused the requeue (403): Permission denied: requeueing a job needs the submit-job capability in namespace &#34;ml&#34;")
	status, body, _ = ro.post("/ui/requeue/ml/running?lang=zh", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusForbidden, status)
	must.StrContains(t, body, "governor 拒绝了重新排队（403）")
	status, _, _ = ro.post("/ui/requeue/secret/x", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusForbidden, status, must.Sprint("a namespace the token may not read"))

	// A token that may submit jobs in ml sees the form; the POST needs the
	// session's CSRF token.
	rw := newBrowser(t, srv)
	token = rw.signIn("root")
	_, body, _ = rw.get("/ui/jobs/ml/running")
	must.StrContains(t, body, `action="/ui/requeue/ml/running"`)
	must.StrContains(t, body, ">Requeue</button>")
	status, _, _ = rw.post("/ui/requeue/ml/running", url.Values{"reason": {"drain"}})
	must.Eq(t, http.StatusForbidden, status, must.Sprint("no CSRF token"))
	status, _, _ = rw.post("/ui/requeue/ml/running", url.Values{"csrf": {"forged"}, "reason": {"drain"}})
	must.Eq(t, http.StatusForbidden, status, must.Sprint("a wrong CSRF token"))
	must.SliceEmpty(t, applier.decisions())
	entries, err := db.Entries(ctx, ledger.AuditQuery{})
	must.NoError(t, err)
	must.SliceEmpty(t, entries)

	status, _, resp := rw.post("/ui/requeue/ml/running", url.Values{"csrf": {token}, "reason": {"drain"}})
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/jobs/ml/running?requeued=audited", resp.Header.Get("Location"))
	ds := applier.decisions()
	must.SliceLen(t, 1, ds)
	must.Eq(t, engine.Decision{Action: engine.Requeue, Namespace: "ml", JobID: "running", Version: 5, Class: "standard",
		Priority: 50, Cause: server.CauseManual, Reason: "requeued by root (root-accessor): drain"}, ds[0])
	entries, err = db.Entries(ctx, ledger.AuditQuery{Kind: server.KindJobRequeue})
	must.NoError(t, err)
	must.SliceLen(t, 1, entries)
	must.Eq(t, "root-accessor", entries[0].Actor)
	must.Eq(t, "running", entries[0].Subject)
	_, body, _ = rw.get("/ui/jobs/ml/running?requeued=audited")
	must.StrContains(t, body, "Requeued: the job checkpoints, stops and waits in the queue; written to the audit log.")
	must.StrContains(t, body, "requeued by root (root-accessor): drain", must.Sprint("the decision is listed on the page"))

	// A held job is not running: no form, and the API's 409 is shown.
	_, body, _ = rw.get("/ui/jobs/ml/held")
	must.StrNotContains(t, withoutTokens(body), `action="/ui/requeue/`)
	status, body, _ = rw.post("/ui/requeue/ml/held", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusConflict, status)
	must.StrContains(t, body, "The governor refused the requeue (409): job ml/held is not running")
	status, _, _ = rw.post("/ui/requeue/ml/running", url.Values{"csrf": {token}, "reason": {strings.Repeat("x", 501)}})
	must.Eq(t, http.StatusBadRequest, status)
	must.SliceLen(t, 1, applier.decisions())
}

func TestRequeueWithoutLedgerSaysNotAudited(t *testing.T) {
	applier := &recordingApplier{}
	srv, _ := newGovernor(t, testPlan(), false, false, withRunningJob(applier))
	b := newBrowser(t, srv)
	token := b.signIn("root")
	status, _, resp := b.post("/ui/requeue/ml/running", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/jobs/ml/running?requeued=unaudited", resp.Header.Get("Location"))
	must.SliceLen(t, 1, applier.decisions())
	_, body, _ := b.get("/ui/jobs/ml/running?requeued=unaudited&lang=zh")
	must.StrContains(t, body, "已重新排队")
}

// TestJobActionPaths: the release and the requeue take only a POST to
// <action>/<ns>/<id> of a namespace the caller may read (jobAction).
func TestJobActionPaths(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false, withRunningJob(&recordingApplier{}))
	for _, action := range []string{"release", "requeue"} {
		t.Run(action, func(t *testing.T) {
			b := newBrowser(t, srv)
			token := b.signIn("ml")
			status, _, _ := b.get("/ui/" + action + "/ml/held")
			must.Eq(t, http.StatusMethodNotAllowed, status)
			status, _, _ = b.post("/ui/"+action+"/ml", url.Values{"csrf": {token}})
			must.Eq(t, http.StatusNotFound, status)
			status, _, _ = b.post("/ui/"+action+"/ml/", url.Values{"csrf": {token}})
			must.Eq(t, http.StatusNotFound, status)
			status, _, _ = b.post("/ui/"+action+"/secret/x", url.Values{"csrf": {token}})
			must.Eq(t, http.StatusForbidden, status)
		})
	}
}
