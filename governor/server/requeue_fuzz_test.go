package server

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/shoenig/test/must"
)

// FuzzRequeueRequest feeds what a caller sends to POST
// /allot/v1/jobs/<ns>/<id>/requeue (the decoded path and the body) to
// requeuePath and readRequeue. An accepted path names a non-empty
// namespace without a slash and a non-empty job ID, and rebuilds to the
// path; a body over maxRequeueBody is refused; an accepted reason is
// trimmed, no longer than the body and at most MaxRequeueReason
// characters.
func FuzzRequeueRequest(f *testing.F) {
	f.Add("/allot/v1/jobs/ml/train/requeue", `{"reason":"drain"}`)
	f.Add("/allot/v1/jobs/ml/parent/dispatch-1/requeue", "")
	f.Add("/allot/v1/jobs/../../v1/jobs/ml/x/requeue", `{"reason": 5}`)
	f.Add("/allot/v1/jobs//x/requeue", "{not json")
	f.Add("/allot/v1/jobs/ml//requeue", `{"reason":"  \u0000\n "}`)
	f.Add("/allot/v1/jobs/ml%2Fx/train/requeue", `{"reason":"a","extra":{"deep":[1,2,3]}}`)
	f.Add("/allot/v1/jobs/requeue", "null")
	f.Add("/allot/v1/jobs/ml/j/requeue", `{"reason":"`+strings.Repeat("é", 501)+`"}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		// The mux routes only /allot/v1/jobs/... here.
		path = "/allot/v1/jobs/" + strings.TrimPrefix(path, "/allot/v1/jobs/")
		ns, id, ok := requeuePath(path)
		if ok {
			must.NotEq(t, "", ns)
			must.NotEq(t, "", id)
			must.StrNotContains(t, ns, "/")
			must.Eq(t, path, "/allot/v1/jobs/"+ns+"/"+id+"/requeue")
		}
		in, err := readRequeue(httptest.NewRequest("POST", "/allot/v1/jobs/ml/j/requeue", strings.NewReader(body)))
		if len(body) > maxRequeueBody {
			must.Error(t, err)
		}
		if err != nil {
			return
		}
		must.Eq(t, strings.TrimSpace(in.Reason), in.Reason)
		must.LessEq(t, allotapi.MaxRequeueReason, utf8.RuneCountInString(in.Reason))
		if utf8.ValidString(body) {
			must.LessEq(t, len(body), len(in.Reason))
		}
	})
}
