package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/allot-sh/allot/governor/allotapi"
)

// APIError is a non-200 answer of the governor's API (or of Nomad through
// the proxy), shown to the user as it came.
type APIError struct {
	Status int
	Msg    string
}

func (e *APIError) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Msg) }

// api GETs path (with query) from the governor's /allot/v1 handler in
// process, with the session's token and the request's TLS state, and
// decodes the answer into out. The API filters it for the token, so the
// console can never show more than the API would.
func (c *Console) api(q *Req, path string, out any) error {
	rec, err := c.call(q.R.Context(), q, c.opts.API, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if rec.status != http.StatusOK {
		return &APIError{Status: rec.status, Msg: allotapi.ErrorText(rec.body.Bytes())}
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

// queueOf is the queue as the caller may see it: Options.Queue (the API's
// own function, no JSON round trip) when set, else /allot/v1/queue in
// process.
func (c *Console) queueOf(q *Req) (allotapi.Queue, error) {
	if c.opts.Queue != nil {
		return c.opts.Queue(q.Caller)
	}
	var qa allotapi.Queue
	err := c.api(q, "/allot/v1/queue", &qa)
	return qa, err
}

// nomad GETs path from Nomad through the governor's proxy with the
// session's token (Nomad filters and refuses as it would for the token)
// and decodes the JSON answer into out.
func (c *Console) nomad(q *Req, path string, out any) error {
	if c.opts.Nomad == nil {
		return &APIError{Status: http.StatusNotFound, Msg: "no Nomad proxy"}
	}
	rec, err := c.call(q.R.Context(), q, c.opts.Nomad, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if rec.status != http.StatusOK {
		return &APIError{Status: rec.status, Msg: strings.TrimSpace(rec.body.String())}
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("decoding Nomad's %s: %w", path, err)
	}
	return nil
}

// call runs one request through h in process as the session's caller.
func (c *Console) call(ctx context.Context, q *Req, h http.Handler, method, path string, body io.Reader) (*recorder, error) {
	in, err := http.NewRequestWithContext(ctx, method, path, body)
	if err != nil {
		return nil, fmt.Errorf("building %s %s: %w", method, path, err)
	}
	in.TLS, in.RemoteAddr, in.Host = q.R.TLS, q.R.RemoteAddr, q.R.Host
	if q.S != nil && q.S.Token != "" {
		in.Header.Set("X-Nomad-Token", q.S.Token)
	}
	if body != nil {
		in.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(rec, in)
	return rec, nil
}

// recorder is a minimal in-memory ResponseWriter.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}

// Flush lets streaming handlers flush (nothing to do in memory).
func (r *recorder) Flush() {}
