//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// nomadWrite is one write a governor sent to Nomad, as the recording proxy
// in front of Nomad saw it arrive.
type nomadWrite struct {
	Gov    string    // which governor sent it (each has its own recorder)
	At     time.Time // when the request arrived (it goes on to Nomad at once)
	Method string
	Path   string
	Job    string // ns/id of a job register or deregister ("" otherwise)
	// Epoch is the X-Allot-Epoch header (0: none); MetaEpoch the
	// allot.epoch meta of a job register (0: none).
	Epoch, MetaEpoch uint64
	State            string // allot.state a job register writes
	Stop             bool
	Status           int // Nomad's answer
	// Unanswered: the governor gave up on the write (its context ended,
	// e.g. its lease's deadline) before Nomad's answer reached it. Nomad
	// may have stored it all the same; Status is then the proxy's 502.
	Unanswered bool
}

// writeLog collects the writes of every governor.
type writeLog struct {
	mu sync.Mutex
	ws []nomadWrite
}

func (l *writeLog) add(w nomadWrite) {
	l.mu.Lock()
	l.ws = append(l.ws, w)
	l.mu.Unlock()
}

// snapshot returns the writes in arrival order.
func (l *writeLog) snapshot() []nomadWrite {
	l.mu.Lock()
	out := append([]nomadWrite(nil), l.ws...)
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// recordingProxy sits between one governor and Nomad: reads and streams
// pass through, every write is logged with its arrival time, its term
// (header and job meta) and Nomad's answer.
func recordingProxy(t testing.TB, log *writeLog, gov, nomad string) string {
	target, err := url.Parse(nomad)
	if err != nil {
		t.Fatalf("recording proxy: %v", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || strings.HasSuffix(r.URL.Path, "/plan") {
			rp.ServeHTTP(w, r)
			return
		}
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := describeWrite(gov, at, r, body)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(sw, r)
		rec.Status = sw.status
		rec.Unanswered = r.Context().Err() != nil
		log.add(rec)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// describeWrite reads what a write is: for job registers the job, its
// governor state and term.
func describeWrite(gov string, at time.Time, r *http.Request, body []byte) nomadWrite {
	w := nomadWrite{Gov: gov, At: at, Method: r.Method, Path: r.URL.Path}
	w.Epoch, _ = strconv.ParseUint(r.Header.Get("X-Allot-Epoch"), 10, 64)
	ns := r.URL.Query().Get("namespace")
	switch {
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/job/"):
		w.Job = orDefaultNS(ns) + "/" + strings.TrimPrefix(r.URL.Path, "/v1/job/")
	case r.URL.Path == "/v1/jobs" || (strings.HasPrefix(r.URL.Path, "/v1/job/") && strings.Count(r.URL.Path, "/") == 3):
		var req struct {
			Job struct {
				ID        string
				Namespace string
				Stop      bool
				Meta      map[string]string
			}
		}
		if json.Unmarshal(body, &req) == nil && req.Job.ID != "" {
			if req.Job.Namespace != "" {
				ns = req.Job.Namespace
			}
			w.Job = orDefaultNS(ns) + "/" + req.Job.ID
			w.State, w.Stop = req.Job.Meta["allot.state"], req.Job.Stop
			w.MetaEpoch, _ = strconv.ParseUint(req.Job.Meta["allot.epoch"], 10, 64)
		}
	}
	return w
}

func orDefaultNS(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// fencingViolations checks the write log in arrival order: every job
// write carries a term, the header and the sealed meta agree, and no
// write of an older term arrives after the first write of a newer one.
func fencingViolations(ws []nomadWrite) []string {
	var out []string
	var top uint64
	var topAt time.Time
	for _, w := range ws {
		if w.Job == "" {
			continue
		}
		switch {
		case w.Epoch == 0:
			out = append(out, fmt.Sprintf("%s %s %s by %s at %s carries no term", w.Method, w.Path, w.Job, w.Gov, w.At.Format(time.RFC3339Nano)))
		case w.State != "" && w.MetaEpoch != w.Epoch:
			out = append(out, fmt.Sprintf("%s %s: header term %d, sealed allot.epoch %d", w.Method, w.Job, w.Epoch, w.MetaEpoch))
		case w.Epoch < top:
			out = append(out, fmt.Sprintf("%s %s %s by %s of term %d arrived at %s, after term %d's first write at %s (status %d)",
				w.Method, w.Path, w.Job, w.Gov, w.Epoch, w.At.Format(time.RFC3339Nano), top, topAt.Format(time.RFC3339Nano), w.Status))
		case w.Epoch > top:
			top, topAt = w.Epoch, w.At
		}
	}
	return out
}

// admissions counts, per job, the accepted writes that admit it (running
// with allot.state admitted).
func admissions(ws []nomadWrite) map[string]int {
	out := map[string]int{}
	for _, w := range ws {
		if w.Job != "" && w.Status == http.StatusOK && w.State == "admitted" && !w.Stop {
			out[w.Job]++
		}
	}
	return out
}

// unansweredAdmission reports whether Nomad's stored version of job
// (admitted, sealed with term storedEpoch) came from an admitting write the
// log holds as unanswered: a write its governor gave up on while Nomad
// stored it. Only a job without an answered admitting write needs this.
func unansweredAdmission(ws []nomadWrite, job string, storedEpoch uint64) bool {
	for _, w := range ws {
		if w.Job == job && w.Unanswered && w.State == "admitted" && !w.Stop && w.MetaEpoch == storedEpoch {
			return true
		}
	}
	return false
}

// firstWriteOf returns when the first job write of term epoch arrived.
func firstWriteOf(ws []nomadWrite, epoch uint64) (time.Time, bool) {
	for _, w := range ws {
		if w.Job != "" && w.Epoch == epoch {
			return w.At, true
		}
	}
	return time.Time{}, false
}
