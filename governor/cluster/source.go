package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// Source is where the watcher reads the cluster from.
type Source interface {
	// Initial lists the whole cluster.
	Initial(ctx context.Context) (*Initial, error)
	// Events streams frames of every topic in Topics after index.
	Events(ctx context.Context, index uint64) (<-chan *Frame, error)
	// Namespaces blocks until the namespaces change after waitIndex (or a
	// server-side timeout) and returns them with the new index.
	Namespaces(ctx context.Context, waitIndex uint64) ([]*api.Namespace, uint64, error)
	// JobExists tells whether job ns/id still exists.
	JobExists(ctx context.Context, ns, id string) (bool, error)
}

// NomadSource reads from a Nomad API client (with the governor's token).
type NomadSource struct {
	Client *api.Client
}

// Initial lists nodes, allocations and jobs of every namespace. Its index
// is the lowest of the listings' indexes, so events after it replay
// whatever a later listing already contained (upserts are idempotent).
func (n *NomadSource) Initial(ctx context.Context) (*Initial, error) {
	q := (&api.QueryOptions{Namespace: "*", Params: map[string]string{"resources": "true"}}).WithContext(ctx)
	in := &Initial{}
	stubs, meta, err := n.Client.Nodes().List(q)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	in.Index = meta.LastIndex
	for _, st := range stubs {
		node, _, err := n.Client.Nodes().Info(st.ID, q)
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", st.ID, err)
		}
		in.Nodes = append(in.Nodes, node)
	}
	if err := n.listAllocs(q, in); err != nil {
		return nil, err
	}
	if err := n.listJobs(ctx, in); err != nil {
		return nil, err
	}
	if err := n.listBlocked(ctx, in); err != nil {
		return nil, err
	}
	return in, nil
}

// listBlocked lists the blocked evaluations of every namespace (jobs
// Nomad could not place; see blocked.go).
func (n *NomadSource) listBlocked(ctx context.Context, in *Initial) error {
	q := (&api.QueryOptions{Namespace: "*", Filter: `Status == "blocked"`}).WithContext(ctx)
	evals, _, err := n.Client.Evaluations().List(q)
	if err != nil {
		return fmt.Errorf("listing blocked evaluations: %w", err)
	}
	in.Blocked = evals
	return nil
}

func (n *NomadSource) listAllocs(q *api.QueryOptions, in *Initial) error {
	stubs, meta, err := n.Client.Allocations().List(q)
	if err != nil {
		return fmt.Errorf("listing allocations: %w", err)
	}
	in.Index = minIndex(in.Index, meta.LastIndex)
	for _, st := range stubs {
		in.Allocs = append(in.Allocs, &api.Allocation{ID: st.ID, Namespace: st.Namespace, JobID: st.JobID,
			TaskGroup: st.TaskGroup, NodeID: st.NodeID, DesiredStatus: st.DesiredStatus, ClientStatus: st.ClientStatus, CreateIndex: st.CreateIndex,
			AllocatedResources: st.AllocatedResources, TaskStates: st.TaskStates})
	}
	return nil
}

// listParallel is how many jobs a listing reads at once.
const listParallel = 8

// jobRead is one job of a listing as a worker read it.
type jobRead struct {
	job     *api.Job
	dereg   uint64 // its latest job-deregister (readDeregister); 0: none
	missing bool   // purged since the listing
	err     error
}

// listJobs reads every job of the listing, listParallel at a time (one
// read each: the stubs lack the task groups), keeping the listing's order.
func (n *NomadSource) listJobs(ctx context.Context, in *Initial) error {
	q := (&api.QueryOptions{Namespace: "*"}).WithContext(ctx)
	stubs, meta, err := n.Client.Jobs().List(q)
	if err != nil {
		return fmt.Errorf("listing jobs: %w", err)
	}
	in.Index = minIndex(in.Index, meta.LastIndex)
	reads := make([]jobRead, len(stubs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < listParallel && w < len(stubs); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reads[i] = n.readJob(ctx, stubs[i])
			}
		}()
	}
	for i := range stubs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range reads {
		if r.err != nil {
			return r.err
		}
		if r.missing {
			continue
		}
		in.Jobs = append(in.Jobs, r.job)
		if r.dereg > 0 {
			if in.Deregs == nil {
				in.Deregs = map[string]uint64{}
			}
			in.Deregs[str(r.job.Namespace, api.DefaultNamespace)+"/"+*r.job.ID] = r.dereg
		}
	}
	return nil
}

// readJob reads one job of a listing and, when it looks held, its latest
// deregister.
func (n *NomadSource) readJob(ctx context.Context, st *api.JobListStub) jobRead {
	job, _, err := n.Client.Jobs().Info(st.ID, (&api.QueryOptions{Namespace: st.Namespace}).WithContext(ctx))
	if isNotFound(err) {
		return jobRead{missing: true}
	}
	if err != nil {
		return jobRead{err: fmt.Errorf("reading job %s/%s: %w", st.Namespace, st.ID, err)}
	}
	dereg, err := n.readDeregister(ctx, job)
	return jobRead{job: job, dereg: dereg, err: err}
}

// readDeregister records, for a job that looks held, its latest
// job-deregister evaluation: a user's `nomad job stop` while the governor
// was not following the event stream (audit #21). Nomad 1.6.1 gives the
// stop's evaluation the JobModifyIndex of the stopped job (fsm
// applyDeregisterJob), so a deregister at or above the job's index is a
// stop of the version the listing holds. Nomad garbage-collects
// evaluations (eval_gc_threshold, 1h by default): a stop older than that
// while the governor was down is not seen.
func (n *NomadSource) readDeregister(ctx context.Context, job *api.Job) (uint64, error) {
	if job.Stop == nil || !*job.Stop || job.Meta[jobmeta.State] != jobmeta.StateQueued {
		return 0, nil
	}
	ns := str(job.Namespace, api.DefaultNamespace)
	evals, _, err := n.Client.Jobs().Evaluations(*job.ID, (&api.QueryOptions{Namespace: ns}).WithContext(ctx))
	if isNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading evaluations of job %s/%s: %w", ns, *job.ID, err)
	}
	return latestDeregister(evals), nil
}

// latestDeregister is the highest JobModifyIndex of the job-deregister
// evaluations in evals; 0 when there is none.
func latestDeregister(evals []*api.Evaluation) uint64 {
	var idx uint64
	for _, ev := range evals {
		if ev.TriggeredBy == "job-deregister" && ev.JobModifyIndex > idx {
			idx = ev.JobModifyIndex
		}
	}
	return idx
}

// Events opens the event stream after index.
func (n *NomadSource) Events(ctx context.Context, index uint64) (<-chan *Frame, error) {
	q := url.Values{"index": {strconv.FormatUint(index, 10)}}
	for topic, keys := range Topics {
		for _, k := range keys {
			q.Add("topic", string(topic)+":"+k)
		}
	}
	// Nomad gzips every response whose request accepts gzip, and the api
	// client always adds "Accept-Encoding: gzip" after the query's headers;
	// Nomad's compression handler reads only the first value, so this
	// header keeps the stream uncompressed: on the loopback or a LAN,
	// compressing every frame costs the server and the governor CPU for
	// nothing.
	opts := &api.QueryOptions{Namespace: "*", Headers: map[string]string{"Accept-Encoding": "identity"}}
	body, err := n.Client.Raw().Response("/v1/event/stream?"+q.Encode(), opts.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("opening event stream at index %d: %w", index, err)
	}
	ch := make(chan *Frame, 16)
	go func() {
		defer body.Close()
		ReadFrames(ctx, body, ch)
	}()
	return ch, nil
}

// Namespaces runs a blocking query on the namespace list.
func (n *NomadSource) Namespaces(ctx context.Context, waitIndex uint64) ([]*api.Namespace, uint64, error) {
	nss, meta, err := n.Client.Namespaces().List((&api.QueryOptions{WaitIndex: waitIndex}).WithContext(ctx))
	if err != nil {
		return nil, 0, fmt.Errorf("listing namespaces: %w", err)
	}
	return nss, meta.LastIndex, nil
}

// JobExists reads job ns/id.
func (n *NomadSource) JobExists(ctx context.Context, ns, id string) (bool, error) {
	_, _, err := n.Client.Jobs().Info(id, (&api.QueryOptions{Namespace: ns}).WithContext(ctx))
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func isNotFound(err error) bool {
	var ue api.UnexpectedResponseError
	if errors.As(err, &ue) {
		return ue.StatusCode() == 404
	}
	return false
}

func minIndex(a, b uint64) uint64 {
	if a == 0 || b < a {
		return b
	}
	return a
}
