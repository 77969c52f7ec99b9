package allotapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// seen is what the fake governor saw of one request.
type seen struct {
	method, path, token, contentType string
	body                             allotapi.RequeueRequest
}

// fakeGovernor answers GET /allot/v1/classes, a 404 for any other GET,
// 200 to a requeue of ml/ok and 503 with Retry-After to any other
// requeue; it records every request.
func fakeGovernor(t *testing.T) (*allotapi.Client, *[]seen) {
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.EscapedPath(), token: r.Header.Get("X-Nomad-Token"), contentType: r.Header.Get("Content-Type")}
		if r.Method == http.MethodPost {
			must.NoError(t, json.NewDecoder(r.Body).Decode(&s.body))
		}
		got = append(got, s)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/allot/v1/classes":
			_, _ = w.Write([]byte(`{"classes":[{"name":"high"}]}`))
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no such job"}`))
		case r.URL.Path == "/allot/v1/jobs/ml/ok/requeue":
			_, _ = w.Write([]byte(`{"namespace":"ml","job_id":"ok","state":"queued","audited":true}`))
		default:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"no leader"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return &allotapi.Client{Address: srv.URL + "/", Token: "secret"}, &got
}

// TestClientRequests: reads and writes carry the token; a write is JSON;
// answers decode, refusals become the documented errors.
func TestClientRequests(t *testing.T) {
	c, got := fakeGovernor(t)
	ctx := context.Background()

	cl, err := c.Classes(ctx)
	must.NoError(t, err)
	must.Len(t, 1, cl.Classes)
	must.Eq(t, "high", cl.Classes[0].Name)
	_, err = c.Why(ctx, "ml", "a/b")
	must.ErrorIs(t, err, allotapi.ErrNotFound)
	must.EqError(t, err, "GET /allot/v1/jobs/ml/a%2Fb/why: not found: no such job")

	res, err := c.Requeue(ctx, "ml", "ok", "drain")
	must.NoError(t, err)
	must.Eq(t, allotapi.RequeueResult{Namespace: "ml", JobID: "ok", State: "queued", Audited: true}, *res)
	_, err = c.Requeue(ctx, "ml", "other", "")
	var se *allotapi.StatusError
	must.True(t, errors.As(err, &se))
	must.Eq(t, allotapi.StatusError{Method: http.MethodPost, Path: "/allot/v1/jobs/ml/other/requeue",
		Status: http.StatusServiceUnavailable, Msg: "no leader", RetryAfter: "2"}, *se)
	must.True(t, allotapi.IsStatus(err, http.StatusServiceUnavailable))

	must.Eq(t, []seen{
		{method: "GET", path: "/allot/v1/classes", token: "secret"},
		{method: "GET", path: "/allot/v1/jobs/ml/a%2Fb/why", token: "secret"},
		{method: "POST", path: "/allot/v1/jobs/ml/ok/requeue", token: "secret", contentType: "application/json", body: allotapi.RequeueRequest{Reason: "drain"}},
		{method: "POST", path: "/allot/v1/jobs/ml/other/requeue", token: "secret", contentType: "application/json"},
	}, *got)
}

// TestClientUnreachable: a governor that does not answer is an error
// naming the request.
func TestClientUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c := &allotapi.Client{Address: addr}
	_, err := c.Queue(context.Background())
	must.ErrorContains(t, err, "GET /allot/v1/queue: ")
	_, err = c.Requeue(context.Background(), "ml", "x", "")
	must.ErrorContains(t, err, "POST /allot/v1/jobs/ml/x/requeue: ")
}

// TestErrorText: a refusal's JSON error field, else its body, trimmed.
func TestErrorText(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"json error":   {body: `{"error":"no such job"}`, want: "no such job"},
		"json, no err": {body: `{"other":1}` + "\n", want: `{"other":1}`},
		"plain text":   {body: "  bad gateway\n", want: "bad gateway"},
		"empty":        {body: "", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, allotapi.ErrorText([]byte(tc.body)))
		})
	}
}
