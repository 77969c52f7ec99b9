package proxy

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/nomad/structs"
	"github.com/shoenig/test/must"
)

// FuzzSubmission feeds register bodies to the decoder, the judge and the
// rewriter. They never panic, and when a body is judged, what the proxy
// sends decodes (as Nomad decodes it) to the same job as the body's first
// JSON value except Meta, Stop and Priority, which are what the proxy set.
func FuzzSubmission(f *testing.F) {
	for _, seed := range []string{
		`{"Job":{"ID":"a","Namespace":"ml","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Resources":{"Devices":[{"Name":"nvidia/gpu"}]}}]}]}}`,
		`{"job":{"id":"a","META":{"allot.state":"admitted"},"stop":true,"PRIORITY":99}} trailing`,
		`{"Namespace":"ml","Job":{"ID":"a","TaskGroups":[{"Name":"g","Scaling":{"Min":3,"Max":9}}]}}{"Job":{}}`,
		`{"Job":{"ID":"a","TaskGroups":[null]}}`,
		`{"Job":{"ID":"a","ſtop":true,"TaskGroups":[{"Count":-5}]}}`,
		`{"Job":{"ID":"a","TaskGroups":[{"Tasks":[{"Resources":{"Devices":[{"Count":18446744073709551615}]}}]}]}}`,
		`[]`, `null`, `{"Job":null}`, ``,
	} {
		f.Add([]byte(seed))
	}
	p := &Proxy{region: api.GlobalRegion}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("PUT", "/v1/jobs", nil)
		sub, err := p.parseSubmission(r, body, "", false)
		if err != nil {
			return
		}
		j := sub.req.Job
		if canonical(j, sub.t.Namespace, sub.t.Region) != nil {
			return
		}
		prio := 50
		j.Priority, j.Meta, j.Stop = &prio, map[string]string{"allot.state": "queued"}, pointer(true)
		pieces, err := sub.rewrite(j)
		if err != nil {
			return
		}
		var want, got api.JobRegisterRequest
		must.NoError(t, json.NewDecoder(bytes.NewReader(sub.first)).Decode(&want))
		sent := bytes.Join(pieces, nil)
		must.NoError(t, json.NewDecoder(bytes.NewReader(sent)).Decode(&got), must.Sprintf("sent %q", sent))
		must.Eq(t, 50, *got.Job.Priority)
		must.Eq(t, true, *got.Job.Stop)
		must.Eq(t, map[string]string{"allot.state": "queued"}, got.Job.Meta)
		want.Job.Priority, want.Job.Meta, want.Job.Stop = got.Job.Priority, got.Job.Meta, got.Job.Stop
		must.Eq(t, want, got)
	})
}

// FuzzWriteMirrors checks that the proxy's mirrors of Nomad's dispatch and
// revert request types read namespace, region, token, job ID and meta
// from any body exactly as Nomad's own structs do.
func FuzzWriteMirrors(f *testing.F) {
	for _, seed := range []string{
		`{"Namespace":"ml","JobID":"p","Meta":{"a":"b"}}`,
		`{"namespace":"ml","NAMESPACE":"x","region":"eu","authtoken":"s","JobVersion":3}`,
		`{"Payload":"!!","Namespace":"ml"}`, `{"Forwarded":"yes","Namespace":"ml"}`, `null`, `[1]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var mine dispatchRequest
		var theirs structs.JobDispatchRequest
		_, err1 := decodeFirst(body, &mine)
		err2 := json.NewDecoder(bytes.NewReader(body)).Decode(&theirs)
		must.Eq(t, err1 == nil, err2 == nil, must.Sprintf("%v / %v", err1, err2))
		if err1 == nil {
			must.Eq(t, theirs.Namespace, mine.Namespace)
			must.Eq(t, theirs.Region, mine.Region)
			must.Eq(t, theirs.AuthToken, mine.AuthToken)
			must.Eq(t, theirs.JobID, mine.JobID)
			must.Eq(t, theirs.Meta, mine.Meta)
		}
		var rm revertRequest
		var rt structs.JobRevertRequest
		_, err1 = decodeFirst(body, &rm)
		err2 = json.NewDecoder(bytes.NewReader(body)).Decode(&rt)
		must.Eq(t, err1 == nil, err2 == nil, must.Sprintf("%v / %v", err1, err2))
		if err1 == nil {
			must.Eq(t, rt.Namespace, rm.Namespace)
			must.Eq(t, rt.Region, rm.Region)
			must.Eq(t, rt.JobID, rm.JobID)
			must.Eq(t, rt.JobVersion, rm.JobVersion)
		}
	})
}

// FuzzClassify checks the route classifier on any method and path: it
// never panics, a job route's ID and suffix give the path back, and a
// write to /v1/job/… is an admission route unless its suffix names a
// sub-resource that cannot grow allocations.
func FuzzClassify(f *testing.F) {
	for _, seed := range []string{"/v1/jobs", "/v1/job/", "/v1/job/a/b/plan", "/v1/job/x/periodic/force", "/v1/job/x/scale",
		"/v1/job//dispatch", "/v1/job/x/evaluate", "/v1/jobs/parse", "/v1/job/x/revert/", "/V1/job/x"} {
		f.Add("PUT", seed)
	}
	f.Add("GET", "/v1/job/x")
	f.Fuzz(func(t *testing.T, method, path string) {
		kind, id := Classify(method, path)
		if method != "PUT" && method != "POST" {
			must.Eq(t, Passthrough, kind)
			return
		}
		rest, isJob := strings.CutPrefix(path, "/v1/job/")
		if !isJob {
			must.Eq(t, path == "/v1/jobs", kind == Register)
			return
		}
		suffix, ok := strings.CutPrefix(rest, id)
		must.True(t, ok, must.Sprintf("id %q is the start of %q", id, rest))
		if kind == Passthrough {
			must.True(t, passthroughSuffix(suffix), must.Sprintf("%q passes", suffix))
		}
		if kind == Register {
			must.Eq(t, "", suffix)
		}
	})
}

func passthroughSuffix(s string) bool {
	for _, js := range jobSuffixes {
		if js.suffix == s && js.kind == Passthrough {
			return true
		}
	}
	return false
}
