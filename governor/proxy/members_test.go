package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

func TestObjectMembers(t *testing.T) {
	cases := map[string]struct {
		data string
		keys []string
		vals []string
		ok   bool
	}{
		"empty":         {data: ` { } `, ok: true},
		"not an object": {data: `[1, 2]`},
		"a string":      {data: `"x"`},
		"nested and escaped": {data: "{\"a\" : {\"b\": [1, {\"c\": \"}]\\\"\"}]}, \"d\\u0065\":\"x\\\\\" ,\"e\":null}",
			keys: []string{"a", "de", "e"}, vals: []string{`{"b": [1, {"c": "}]\""}]}`, `"x\\"`, `null`}, ok: true},
		"literals": {data: `{"n":-1.5e3,"t":true}`, keys: []string{"n", "t"}, vals: []string{"-1.5e3", "true"}, ok: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.True(t, json.Valid([]byte(tc.data)))
			ms, ok := objectMembers([]byte(tc.data))
			must.Eq(t, tc.ok, ok)
			var keys, vals []string
			for _, m := range ms {
				keys, vals = append(keys, m.key), append(vals, tc.data[m.value:m.end])
			}
			must.Eq(t, tc.keys, keys)
			must.Eq(t, tc.vals, vals)
		})
	}
}

// The body reaches Nomad byte for byte except the job's Meta, Stop and
// Priority, and each group's Constraints when the governor pins the job
// (TestSetConstraints).
func TestRegisterKeepsUnknownBytes(t *testing.T) {
	f := newFixture(t, true)
	body := strings.Replace(registerBody("ml", "keep", 1), `"FutureJobField":{"x":1}`, `"FutureJobField" : {"x": [1, "}"]}`, 1)
	status, _ := put(t, f.srv.URL+"/v1/jobs", body)
	must.Eq(t, 200, status)
	sent := string(f.nomad.body("PUT /v1/jobs"))
	must.StrHasPrefix(t, `{"FutureTopLevel":7,"Job":{"ID":"keep"`, sent)
	must.StrContains(t, sent, `"FutureJobField" : {"x": [1, "}"]}`)
	must.StrContains(t, sent, `"TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"raw_exec","Resources":{"CPU":100,"MemoryMB":64,
"Devices":[{"Name":"nvidia/gpu","Count":1}]}}]`)
}

// Nomad matches keys without regard to case; so does the proxy, or a job
// sent as "job" would slip through unadmitted.
func TestRegisterMatchesKeysLikeNomad(t *testing.T) {
	f := newFixture(t, true)
	body := `{"job":{"id":"lower","namespace":"ml","type":"batch","node_pool":"x","NodePool":"gpu","meta":{"owner":"ana"},"STOP":false,"priority":10,
"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Resources":{"CPU":100,"MemoryMB":64,"Devices":[{"Name":"nvidia/gpu","Count":4}]}}]}]}}`
	status, out := put(t, f.srv.URL+"/v1/jobs", body)
	must.Eq(t, 200, status)
	must.StrContains(t, out["Warnings"].(string), "allot: job ml/lower is QUEUED")
	var sent map[string]map[string]json.RawMessage
	must.NoError(t, json.Unmarshal(f.nomad.body("PUT /v1/jobs"), &sent))
	job := sent["job"]
	for _, k := range []string{"meta", "STOP", "priority"} {
		_, ok := job[k]
		must.False(t, ok, must.Sprint(k, " is replaced"))
	}
	must.Eq(t, "true", string(job["Stop"]))
	must.Eq(t, "50", string(job["Priority"]))
	var meta map[string]string
	must.NoError(t, json.Unmarshal(job["Meta"], &meta))
	must.Eq(t, "ana", meta["owner"])
	must.Eq(t, "queued", meta["allot.state"])
}

func TestRegisterRefusesTwoJobs(t *testing.T) {
	f := newFixture(t, true)
	body := `{"Job":{"ID":"a","Namespace":"ml","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Resources":{"Devices":[{"Name":"nvidia/gpu","Count":8}]}}]}]},"job":{"ID":"a","Namespace":"ml"}}`
	status, out := put(t, f.srv.URL+"/v1/jobs", body)
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, out["raw"].(string), "more than one Job member")
	must.Nil(t, f.nomad.body("PUT /v1/jobs"), must.Sprint("nothing reached Nomad"))
}

// A body the proxy cannot judge on an admission route is refused with the
// reason and never reaches Nomad (audit #2: passing such bodies through was
// the hole; Nomad reads only the first JSON value and accepts the rest).
func TestRegisterRefusesWhatItCannotJudge(t *testing.T) {
	cases := map[string]struct{ body, reason string }{
		"not json":   {body: `{"Job": `, reason: "decoding the request body as Nomad does"},
		"no job":     {body: `{"Jobs": {}}`, reason: "Job must be specified"},
		"null job":   {body: `{"Job": null}`, reason: "Job must be specified"},
		"no job id":  {body: `{"Job": {"Namespace": "ml"}}`, reason: "Job ID hasn't been provided"},
		"array":      {body: `[]`, reason: "cannot unmarshal array"},
		"empty":      {body: ``, reason: "Request body is empty"},
		"null group": {body: `{"Job": {"ID": "x", "Namespace": "ml", "TaskGroups": [null]}}`, reason: "TaskGroups[0] is null"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			status, out := put(t, f.srv.URL+"/v1/jobs", tc.body)
			must.Eq(t, http.StatusBadRequest, status)
			must.StrContains(t, out["raw"].(string), tc.reason)
			must.Nil(t, f.nomad.body("PUT /v1/jobs"), must.Sprint("nothing reached Nomad"))
		})
	}
}

// The proxy keeps an idle connection to Nomad per caller in flight, on a
// copy of the transport it is given.
func TestProxyKeepsIdleConnections(t *testing.T) {
	given := &http.Transport{MaxIdleConnsPerHost: 3}
	p := New(Options{Transport: given, Log: hclog.NewNullLogger()})
	tr, ok := p.client.Transport.(*http.Transport)
	must.True(t, ok)
	must.Eq(t, maxIdleConns, tr.MaxIdleConnsPerHost)
	must.Eq(t, http.RoundTripper(tr), p.rp.Transport)
	must.Eq(t, 3, given.MaxIdleConnsPerHost, must.Sprint("the caller's transport is not changed"))
}

func TestPiecesReader(t *testing.T) {
	pieces := func() [][]byte { return [][]byte{[]byte(`{"a"`), nil, []byte(`:`), []byte(`1}`)} }
	cases := map[string]struct {
		buf   int
		reads []string
	}{
		"one read takes every piece": {buf: 64, reads: []string{`{"a":1}`}},
		"reads span pieces":          {buf: 3, reads: []string{`{"a`, `":1`, `}`}},
		"one byte at a time":         {buf: 1, reads: []string{`{`, `"`, `a`, `"`, `:`, `1`, `}`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &piecesReader{pieces: pieces()}
			b := make([]byte, tc.buf)
			var got []string
			for {
				n, err := r.Read(b)
				if err == io.EOF {
					must.Zero(t, n)
					break
				}
				must.NoError(t, err)
				got = append(got, string(b[:n]))
			}
			must.Eq(t, tc.reads, got)
		})
	}
}

// A body in many pieces reaches Nomad in one write after the headers'
// (the transport flushes headers first for a reader it does not know),
// not one write per piece.
func TestSendWritesBodyAtOnce(t *testing.T) {
	var got []byte
	nomad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer nomad.Close()
	var writes atomic.Int64
	dial := (&net.Dialer{}).DialContext
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		return countingConn{Conn: c, writes: &writes}, err
	}}
	u, err := url.Parse(nomad.URL)
	must.NoError(t, err)
	p := New(Options{Target: u, Transport: tr})
	var pieces [][]byte
	var want bytes.Buffer
	for i := 0; i < 300; i++ {
		piece := []byte(strconv.Itoa(i) + ",")
		pieces = append(pieces, piece)
		want.Write(piece)
	}
	resp, _, err := p.send(context.Background(), http.MethodPut, *u, http.Header{}, pieces...)
	must.NoError(t, err)
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.Eq(t, want.String(), string(got))
	must.LessEq(t, 2, writes.Load(), must.Sprint("headers and body, not a write per piece"))
}

// countingConn counts the writes to a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// FuzzJSONString: jsonString decodes a quoted key exactly as
// encoding/json does (which Nomad decodes with): the same string, and
// refused where encoding/json refuses it.
func FuzzJSONString(f *testing.F) {
	for _, seed := range []string{`"Job"`, `""`, `"Met\u0061"`, `"ſtop"`, "\"a\xffb\"", "\"tab\there\"", `"a\"b"`,
		`"\ud800"`, `"unterminated`, `"`, `x"y"`, "\"\xe2\x82\"", `"Priority"`, `"日本"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, quoted []byte) {
		var want string
		werr := json.Unmarshal(quoted, &want)
		if len(quoted) == 0 || quoted[0] != '"' {
			return // objectMembers passes only what starts a JSON string
		}
		got, ok := jsonString(quoted)
		must.Eq(t, werr == nil, ok, must.Sprintf("%q: %v", quoted, werr))
		if ok {
			must.Eq(t, want, got, must.Sprintf("%q", quoted))
		}
	})
}
