package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// readBody reads an admission request's body once, at most p.maxBody
// bytes: a larger one is refused with 413 before anything is judged.
func (p *Proxy) readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > p.maxBody {
		return nil, refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", p.maxBody))
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, p.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading request body: %w", err)
	}
	if int64(buf.Len()) > p.maxBody {
		return nil, refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", p.maxBody))
	}
	return buf.Bytes(), nil
}

// passOn sends the request to Nomad as received (body already read).
func (p *Proxy) passOn(w http.ResponseWriter, r *http.Request, body []byte) error {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	p.rp.ServeHTTP(w, r)
	return nil
}

// forward sends r to Nomad with body (the pieces are sent in order, so a
// rewritten body is never copied whole) and the caller's headers, token
// included, and returns the response, its body read.
func (p *Proxy) forward(r *http.Request, body ...[]byte) (*http.Response, []byte, error) {
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	return p.send(r.Context(), r.Method, u, r.Header, body...)
}

// get reads path?query from Nomad with the caller's headers (token
// included): the one way the proxy reads for a caller.
func (p *Proxy) get(r *http.Request, path string, query url.Values) (*http.Response, []byte, error) {
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = path, "", query.Encode()
	return p.send(r.Context(), http.MethodGet, u, r.Header)
}

func (p *Proxy) send(ctx context.Context, method string, u url.URL, h http.Header, body ...[]byte) (*http.Response, []byte, error) {
	pr := &piecesReader{pieces: body}
	var n int64
	for _, b := range body {
		n += int64(len(b))
	}
	h = h.Clone()
	if method != http.MethodGet {
		// Under HA a write is sent only while this governor's lease holds.
		fenced, done, err := p.fence(ctx, h)
		if err != nil {
			return nil, nil, err
		}
		defer done()
		ctx = fenced
	}
	out, err := http.NewRequestWithContext(ctx, method, u.String(), pr)
	if err != nil {
		return nil, nil, fmt.Errorf("building request to Nomad: %w", err)
	}
	if method == http.MethodGet {
		out.Body, out.ContentLength = http.NoBody, 0
	} else {
		out.ContentLength = n
	}
	out.Header = h
	// Nomad would gzip the response and the governor unzip it again, on
	// every submission: ask for it plain.
	out.Header.Set("Accept-Encoding", "identity")
	out.Header.Del("Content-Length")
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, nil, fmt.Errorf("forwarding to Nomad: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading Nomad's response: %w", err)
	}
	return resp, data, nil
}

// errNotFound is a read Nomad answered 404.
var errNotFound = errors.New("not found")

// getOK is get that wants 200: 404 is errNotFound, any other status is
// relayed as the caller's answer (Nomad's own text, e.g. 403).
func (p *Proxy) getOK(r *http.Request, path string, query url.Values) ([]byte, error) {
	resp, data, err := p.get(r, path, query)
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode == http.StatusNotFound:
		return nil, errNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, refuse(resp.StatusCode, fmt.Sprintf("reading %s: Nomad answered %d: %s", path, resp.StatusCode, bytes.TrimSpace(data)))
	}
	return data, nil
}

// reply copies a Nomad response (with a possibly rewritten body) to w.
func reply(w http.ResponseWriter, resp *http.Response, body []byte) {
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Content-Encoding" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// piecesReader reads a body held in pieces, in order, without copying
// the whole body first. Each Read fills b from as many pieces as fit:
// http.Transport copies a body of known length through a 32 KiB buffer
// (io.LimitReader hides any WriteTo) and writes each Read to the socket,
// so a Read per piece cost one write system call per piece (a rewritten
// job is tens of pieces; 15 % of the governor's CPU under a burst of
// submissions).
type piecesReader struct {
	pieces [][]byte
}

// Read implements io.Reader.
func (r *piecesReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && len(r.pieces) > 0 {
		c := copy(b[n:], r.pieces[0])
		n += c
		if r.pieces[0] = r.pieces[0][c:]; len(r.pieces[0]) == 0 {
			r.pieces = r.pieces[1:]
		}
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}
