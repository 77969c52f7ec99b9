//go:build e2e

package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// recorder copies the raw event stream of a real agent, line by line.
type recorder struct {
	mu    sync.Mutex
	lines [][]byte
	index uint64
}

func (r *recorder) run(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", addr+"/v1/event/stream?index=0&namespace=*&topic=Job:*&topic=Allocation:*&topic=Node:*&topic=Evaluation:*&topic=Deployment:*", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var f api.Events
		line := append([]byte(nil), sc.Bytes()...)
		if json.Unmarshal(line, &f) != nil {
			continue
		}
		r.mu.Lock()
		r.lines = append(r.lines, line)
		if f.Index > r.index {
			r.index = f.Index
		}
		r.mu.Unlock()
	}
	return sc.Err()
}

func (r *recorder) at() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index
}

func sleepJob(id string, stop bool, meta map[string]string) *api.Job {
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace = pointer("ml")
	j.Datacenters = []string{"dc1"}
	j.Stop = pointer(stop)
	j.Meta = meta
	task := api.NewTask("sleep", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"300"})
	task.Resources = &api.Resources{CPU: pointer(100), MemoryMB: pointer(64)}
	j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	return j
}

func pointer[T any](v T) *T { return &v }

// TestE2E_RecordEventStream drives a real cluster through a job lifecycle
// while recording its event stream, then checks that replaying the stream
// into a Store gives what a full listing gives. With
// ALLOT_RECORD_EVENTS=1 it also rewrites the fixtures in testdata/.
func TestE2E_RecordEventStream(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Clients: []testcluster.ClientSpec{{Name: "c1"}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	go rec.run(ctx, c.Addr())

	_, err := c.API.Namespaces().Register(&api.Namespace{Name: "ml", Meta: map[string]string{"allot.quota.cpu": "1000"}}, nil)
	must.NoError(t, err)
	w := &api.WriteOptions{Namespace: "ml"}
	for _, j := range []*api.Job{
		sleepJob("train.v1_A", false, nil),
		sleepJob("direct", false, nil),
		sleepJob("held-Job.x", true, map[string]string{"allot.state": "queued", "allot.queued-at": "2026-01-01T00:00:00Z"}),
		sleepJob("purged", true, map[string]string{"allot.state": "queued"}),
	} {
		_, _, err := c.API.Jobs().Register(j, w)
		must.NoError(t, err)
	}
	c.WaitForAlloc("ml", "train.v1_A", time.Minute, testcluster.ClientStatus(api.AllocClientStatusRunning))
	c.WaitForAlloc("ml", "direct", time.Minute, testcluster.ClientStatus(api.AllocClientStatusRunning))
	_, _, err = c.API.Jobs().Deregister("train.v1_A", false, w)
	must.NoError(t, err)
	_, _, err = c.API.Jobs().Deregister("purged", true, w)
	must.NoError(t, err)
	c.Eventually(time.Minute, "train.v1_A allocation stopped", func() error {
		return allocsTerminal(c.API, "train.v1_A")
	})

	src := &NomadSource{Client: c.API}
	final, err := src.Initial(context.Background())
	must.NoError(t, err)
	c.Eventually(30*time.Second, "the stream to reach the listing's index", func() error {
		if rec.at() < final.Index {
			return errNotYet
		}
		return nil
	})
	cancel()
	rec.mu.Lock()
	stream := joinLines(rec.lines)
	rec.mu.Unlock()
	finalJSON, err := json.MarshalIndent(final, "", " ")
	must.NoError(t, err)

	dir := t.TempDir()
	if os.Getenv("ALLOT_RECORD_EVENTS") == "1" {
		dir = "."
	}
	must.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata"), 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(dir, streamFixture), stream, 0o644))
	must.NoError(t, os.WriteFile(filepath.Join(dir, finalFixture), finalJSON, 0o644))
	checkReplay(t, stream, final)
}

var errNotYet = os.ErrDeadlineExceeded

func allocsTerminal(c *api.Client, job string) error {
	allocs, _, err := c.Jobs().Allocations(job, true, &api.QueryOptions{Namespace: "ml"})
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusPending {
			return errNotYet
		}
	}
	return nil
}

func joinLines(lines [][]byte) []byte {
	var out []byte
	for _, l := range lines {
		out = append(append(out, l...), '\n')
	}
	return out
}

// checkReplay replays the live recording and compares with the listing.
func checkReplay(t *testing.T, stream []byte, final *Initial) {
	frames, err := readFrames(stream)
	must.NoError(t, err)
	store := replayThroughWatcher(t, &fakeSource{initial: &Initial{}, frames: frames, final: final})
	want := NewStore(nil, nil)
	want.Reset(final)
	must.Eq(t, sortedSnapshot(want).Jobs, sortedSnapshot(store).Jobs)
	must.Eq(t, sortedSnapshot(want).Allocs, sortedSnapshot(store).Allocs)
}
