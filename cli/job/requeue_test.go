package job

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"
	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/allotapi"
)

// fakeRequeue is a governor that requeues ml/train for token "ok", refuses
// other tokens with 403 and every other job with 409; it records what it
// was asked.
func fakeRequeue(t *testing.T, got *[]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		*got = append(*got, r.Method+" "+r.URL.EscapedPath()+" "+string(body))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("X-Nomad-Token") != "ok":
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(allotapi.Error{Error: `Permission denied: requeueing a job needs the submit-job capability in namespace "ml"`})
		case r.URL.EscapedPath() != "/allot/v1/jobs/ml/train/requeue":
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(allotapi.Error{Error: "job ml/held is not running: it is already queued"})
		default:
			_ = json.NewEncoder(w).Encode(allotapi.RequeueResult{Namespace: "ml", JobID: "train", State: "queued",
				Actor: "6f1c", ActorName: "alice", Reason: "requeued by alice (6f1c): drain", Audited: true})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func runJob(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	app := &cli.App{Writer: &out, ErrWriter: &errOut, ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{Command()}}
	err := app.RunContext(context.Background(), append([]string{"allotctl", "job"}, args...))
	return out.String(), err
}

func TestRequeueCommand(t *testing.T) {
	var got []string
	addr := fakeRequeue(t, &got)
	out, err := runJob("requeue", "-address", addr, "-token", "ok", "-namespace", "ml", "-reason", "drain", "train")
	must.NoError(t, err)
	must.Eq(t, `==> Requeued job "train" in namespace "ml"
    Its allocations checkpoint and stop; it waits in the queue and resumes from its checkpoint when admitted again.

Job       = train
Namespace = ml
State     = queued
Actor     = alice (6f1c)
Reason    = requeued by alice (6f1c): drain
Audited   = yes
`, out)
	must.Eq(t, []string{`POST /allot/v1/jobs/ml/train/requeue {"reason":"drain"}`}, got)

	out, err = runJob("requeue", "-address", addr, "-token", "ok", "-namespace", "ml", "-json", "train")
	must.NoError(t, err)
	var res allotapi.RequeueResult
	must.NoError(t, json.Unmarshal([]byte(out), &res))
	must.Eq(t, "queued", res.State)
	must.Eq(t, "6f1c", res.Actor)
}

func TestRequeueCommandRefusals(t *testing.T) {
	var got []string
	addr := fakeRequeue(t, &got)
	tests := map[string]struct {
		args []string
		want string
	}{
		"another tenant's token": {args: []string{"-token", "other", "-namespace", "ml", "train"},
			want: `requeueing job "train" in namespace "ml": Permission denied: requeueing a job needs the submit-job capability in namespace "ml"`},
		"not running": {args: []string{"-token", "ok", "-namespace", "ml", "held"},
			want: `requeueing job "held" in namespace "ml": job ml/held is not running: it is already queued`},
		"no job": {args: []string{"-token", "ok"}, want: "job requeue needs exactly one job ID"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := runJob(append([]string{"requeue", "-address", addr}, tc.args...)...)
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
			must.Eq(t, "", out)
		})
	}
}
