package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// fakeVarsNomad serves Nomad's /v1/var/ API from memory, or answers every
// request with status when it is not zero.
func fakeVarsNomad(t *testing.T, status int) *api.Client {
	var mu sync.Mutex
	vars := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status != 0 {
			http.Error(w, "Permission denied", status)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		key := r.URL.Query().Get("namespace") + r.URL.Path
		switch r.Method {
		case http.MethodGet:
			body, ok := vars[key]
			if !ok {
				http.Error(w, "variable not found", http.StatusNotFound)
				return
			}
			_, _ = w.Write(body)
		case http.MethodPut:
			if _, ok := vars[key]; ok && r.URL.Query().Get("cas") == "0" {
				w.WriteHeader(http.StatusConflict)
				_, _ = w.Write(vars[key])
				return
			}
			body, _ := io.ReadAll(r.Body)
			vars[key] = body
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := api.DefaultConfig()
	cfg.Address = srv.URL
	c, err := api.NewClient(cfg)
	must.NoError(t, err)
	return c
}

func TestAdmissionSealerFromNomadVariables(t *testing.T) {
	client := fakeVarsNomad(t, 0)
	cfg := config.Admission{KeyNamespace: "allot-system"}
	first, err := admissionSealer(context.Background(), cfg, client, hclog.NewNullLogger())
	must.NoError(t, err)
	second, err := admissionSealer(context.Background(), cfg, client, hclog.NewNullLogger())
	must.NoError(t, err)

	// Both governors share the key: what one seals, the other verifies.
	j := api.NewBatchJob("j", "j", "global", 50)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	must.NoError(t, first.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: now}))
	submitted := now.UnixNano()
	j.SubmitTime = &submitted
	_, err = second.Verify(j)
	must.NoError(t, err)
}

func TestAdmissionSealerFailsFastWhenNomadRefuses(t *testing.T) {
	_, err := admissionSealer(context.Background(), config.Admission{}, fakeVarsNomad(t, http.StatusForbidden), hclog.NewNullLogger())
	must.ErrorContains(t, err, "403")
}

func TestRetryable(t *testing.T) {
	cases := map[string]struct {
		err  error
		want bool
	}{
		"connection refused": {errors.New("dial tcp 127.0.0.1:4646: connect: connection refused"), true},
		"server error":       {statusErr(500), true},
		"permission denied":  {statusErr(403), false},
		"malformed key":      {jobmeta.ErrMalformedKey, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { must.Eq(t, tc.want, retryable(tc.err)) })
	}
}

type statusErr int

func (s statusErr) Error() string   { return "Unexpected response code: " + strconv.Itoa(int(s)) }
func (s statusErr) StatusCode() int { return int(s) }
