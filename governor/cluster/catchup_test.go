package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// indexNomad answers the four listings with tables at the given indexes
// (X-Nomad-Index) and objects at the given ModifyIndexes, and records the
// queries it was sent.
type indexNomad struct {
	tables  map[string]uint64
	objects map[string][]uint64
	mu      sync.Mutex
	queries []string
}

func (f *indexNomad) client(t *testing.T) *api.Client {
	mux := http.NewServeMux()
	for path, table := range map[string]string{"/v1/jobs": "jobs", "/v1/allocations": "allocs", "/v1/evaluations": "evals", "/v1/nodes": "nodes"} {
		table := table
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			f.queries = append(f.queries, table+"?"+r.URL.RawQuery)
			f.mu.Unlock()
			var out []map[string]any
			for i, idx := range f.objects[table] {
				out = append(out, map[string]any{"ID": fmt.Sprint(table, i), "ModifyIndex": idx})
			}
			w.Header().Set("X-Nomad-Index", fmt.Sprint(f.tables[table]))
			must.NoError(t, json.NewEncoder(w).Encode(out))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(&api.Config{Address: srv.URL})
	must.NoError(t, err)
	return c
}

func TestNomadIndexes(t *testing.T) {
	f := &indexNomad{
		tables:  map[string]uint64{"jobs": 40, "allocs": 52, "evals": 61, "nodes": 7},
		objects: map[string][]uint64{"jobs": {12, 40}, "allocs": {50, 33}, "evals": {44}, "nodes": {7}},
	}
	src := &NomadSource{Client: f.client(t)}
	ctx := context.Background()

	table, err := src.TableIndex(ctx)
	must.NoError(t, err)
	must.Eq(t, 61, table, must.Sprint("the highest table index (evaluations garbage-collected at 61)"))
	for _, q := range f.queries {
		must.StrContains(t, q, "per_page=1", must.Sprint("a table's index costs one entry"))
	}

	f.queries = nil
	objects, err := src.ObjectIndex(ctx)
	must.NoError(t, err)
	must.Eq(t, 50, objects, must.Sprint("the newest change of an existing object"))
	must.Len(t, 4, f.queries)
	for _, q := range f.queries {
		must.StrNotContains(t, q, "per_page", must.Sprint("every object is read"))
	}
}

func TestNomadIndexesFail(t *testing.T) {
	down, err := api.NewClient(&api.Config{Address: "http://127.0.0.1:1"}) // nothing listens on port 1
	must.NoError(t, err)
	src := &NomadSource{Client: down}
	_, err = src.TableIndex(context.Background())
	must.ErrorContains(t, err, "reading the index of Nomad's jobs")
	_, err = src.ObjectIndex(context.Background())
	must.ErrorContains(t, err, "listing jobs")
}

// TestAwaitIndex: a waiter is released by the first frame at or above its
// index, not before; a listing at least as new releases it too; an ended
// context ends the wait.
func TestAwaitIndex(t *testing.T) {
	s := NewStore(nil, nil)
	s.Reset(&Initial{Index: 10})
	ctx := context.Background()
	must.True(t, s.AwaitIndex(ctx, 10), must.Sprint("reached already"))

	done := make(chan bool)
	go func() { done <- s.AwaitIndex(ctx, 15) }()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return len(s.waiters) == 1
	}), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
	must.NoError(t, s.Apply(&Frame{Index: 12}))
	must.Eq(t, 12, s.Index())
	s.mu.RLock()
	must.Len(t, 1, s.waiters, must.Sprint("index 12 does not release a wait for 15"))
	s.mu.RUnlock()
	must.NoError(t, s.Apply(&Frame{Index: 15}))
	must.True(t, <-done)

	go func() { done <- s.AwaitIndex(ctx, 30) }()
	s.Reset(&Initial{Index: 31})
	must.True(t, <-done, must.Sprint("a listing newer than the index"))

	ended, cancel := context.WithCancel(ctx)
	cancel()
	must.False(t, s.AwaitIndex(ended, 40))
	s.mu.RLock()
	must.SliceEmpty(t, s.waiters, must.Sprint("a waiter that gave up is forgotten"))
	s.mu.RUnlock()
}

// streamSource lists at index 5 and streams the frames the test sends;
// the stream fails when the test sends an error frame.
type streamSource struct {
	fakeSource
	frames chan *Frame
}

func (s *streamSource) Initial(context.Context) (*Initial, error) { return &Initial{Index: 5}, nil }

func (s *streamSource) Events(context.Context, uint64) (<-chan *Frame, error) { return s.frames, nil }

// TestWatcherStreaming: the watcher says it streams once it opened the
// stream after its listing, and no longer once the stream failed.
func TestWatcherStreaming(t *testing.T) {
	src := &streamSource{frames: make(chan *Frame)}
	store := NewStore(nil, nil)
	stall := make(chan time.Time)
	w := &Watcher{Source: src, Store: store, Log: hclog.NewNullLogger(), BackoffMax: time.Second,
		After: func(time.Duration) <-chan time.Time { return stall }}
	must.False(t, w.Streaming())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	src.frames <- &Frame{Index: 6} // received: the stream is open
	must.True(t, store.AwaitIndex(ctx, 6))
	must.True(t, w.Streaming())
	src.frames <- &Frame{Err: fmt.Errorf("connection reset")}
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return !w.Streaming() }),
		wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
}

// TestInitialReadsJobsInParallelInOrder: the listing reads its jobs
// listParallel at a time and keeps Nomad's order.
func TestInitialReadsJobsInParallelInOrder(t *testing.T) {
	var jobs []*api.Job
	var want []string
	for i := 0; i < 3*listParallel+1; i++ {
		id := fmt.Sprintf("job-%02d", i)
		j := api.NewBatchJob(id, id, "global", 50)
		j.Namespace = pointerTo("ml")
		jobs = append(jobs, j)
		want = append(want, id)
	}
	in, err := (&NomadSource{Client: fakeNomad(t, jobs, nil)}).Initial(context.Background())
	must.NoError(t, err)
	var got []string
	for _, j := range in.Jobs {
		got = append(got, *j.ID)
	}
	must.Eq(t, want, got)
}
