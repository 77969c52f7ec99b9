package testcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/internal/nomadagent"
)

// pollInterval is how often the harness re-checks cluster state.
const pollInterval = 100 * time.Millisecond

// Poll calls check every interval until it returns nil or ctx ends; it then
// returns the last error check gave, so a timeout says what was not true.
func Poll(ctx context.Context, interval time.Duration, check func() error) error {
	return nomadagent.Poll(ctx, interval, check)
}

// Eventually polls check until it returns nil, failing the test with the
// last error when timeout passes.
func (c *Cluster) Eventually(timeout time.Duration, what string, check func() error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := Poll(ctx, pollInterval, check); err != nil {
		c.t.Fatalf("testcluster: waiting %s for %s: %v", timeout, what, err)
	}
}

// waitClientReady waits until the client's node is registered, ready, has
// raw_exec and every project driver plugin healthy, and passes spec.Ready.
func (c *Cluster) waitClientReady(ctx context.Context, cl *Client) error {
	node, err := nomadagent.WaitNodeReady(ctx, c.API, cl.Name(), c.driverNames(), cl.Spec.Ready)
	if node != nil {
		cl.NodeID = node.ID
	}
	return err
}

// Node returns the client's node as the server sees it now.
func (c *Cluster) Node(cl *Client) *api.Node {
	c.t.Helper()
	node, _, err := c.API.Nodes().Info(cl.NodeID, nil)
	if err != nil {
		c.t.Fatalf("testcluster: reading node %s: %v", cl.Name(), err)
	}
	return node
}

// WaitForAlloc waits until the job has an allocation for which match returns
// nil, and returns it.
func (c *Cluster) WaitForAlloc(ns, jobID string, timeout time.Duration, match func(*api.AllocationListStub) error) *api.AllocationListStub {
	c.t.Helper()
	var found *api.AllocationListStub
	c.Eventually(timeout, fmt.Sprintf("an allocation of job %s/%s", ns, jobID), func() error {
		allocs, _, err := c.API.Jobs().Allocations(jobID, true, &api.QueryOptions{Namespace: ns})
		if err != nil {
			return err
		}
		if len(allocs) == 0 {
			return errors.New("no allocations")
		}
		var errs []error
		for _, a := range allocs {
			if err := match(a); err != nil {
				errs = append(errs, fmt.Errorf("alloc %s: %w", a.ID[:8], err))
				continue
			}
			found = a
			return nil
		}
		return errors.Join(errs...)
	})
	return found
}

// ClientStatus matches an allocation in the given client status
// ("running", "complete", …).
func ClientStatus(status string) func(*api.AllocationListStub) error {
	return func(a *api.AllocationListStub) error {
		if a.ClientStatus != status {
			return fmt.Errorf("client status %s (desired %s), want %s", a.ClientStatus, a.DesiredStatus, status)
		}
		return nil
	}
}

// WaitForJobStatus waits until the job's status (pending, running, dead)
// is status.
func (c *Cluster) WaitForJobStatus(ns, jobID, status string, timeout time.Duration) *api.Job {
	c.t.Helper()
	var job *api.Job
	c.Eventually(timeout, fmt.Sprintf("job %s/%s to be %s", ns, jobID, status), func() error {
		j, _, err := c.API.Jobs().Info(jobID, &api.QueryOptions{Namespace: ns})
		if err != nil {
			return err
		}
		if got := *j.Status; got != status {
			return fmt.Errorf("job status %s", got)
		}
		job = j
		return nil
	})
	return job
}
