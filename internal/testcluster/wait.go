package testcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

// pollInterval is how often the harness re-checks cluster state.
const pollInterval = 100 * time.Millisecond

// Poll calls check every interval until it returns nil or ctx ends; it then
// returns the last error check gave, so a timeout says what was not true.
func Poll(ctx context.Context, interval time.Duration, check func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: last state: %v", ctx.Err(), err)
		case <-tick.C:
		}
	}
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

func (c *Cluster) waitLeader(ctx context.Context) error {
	err := Poll(ctx, pollInterval, func() error {
		leader, err := c.API.Status().Leader()
		if err != nil {
			return err
		}
		if leader == "" {
			return errors.New("no leader yet")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for a leader: %w", err)
	}
	return nil
}

// waitClientReady waits until the client's node is registered, ready, has
// raw_exec and every project driver plugin healthy, and passes spec.Ready.
func (c *Cluster) waitClientReady(ctx context.Context, cl *Client) error {
	err := Poll(ctx, pollInterval, func() error {
		node, err := c.nodeByName(cl.Name())
		if err != nil {
			return err
		}
		cl.NodeID = node.ID
		return nodeReady(node, c.driverNames(), cl.Spec.Ready)
	})
	if err != nil {
		return fmt.Errorf("waiting for client %s to be ready: %w", cl.Name(), err)
	}
	return nil
}

func nodeReady(node *api.Node, drivers []string, extra func(*api.Node) error) error {
	if node.Status != api.NodeStatusReady {
		return fmt.Errorf("node %s is %s", node.Name, node.Status)
	}
	for _, d := range drivers {
		info := node.Drivers[d]
		if info == nil || !info.Detected || !info.Healthy {
			return fmt.Errorf("node %s: driver %s not detected and healthy (%+v)", node.Name, d, info)
		}
	}
	if extra != nil {
		return extra(node)
	}
	return nil
}

// nodeByName returns the full node registered under name.
func (c *Cluster) nodeByName(name string) (*api.Node, error) {
	stubs, _, err := c.API.Nodes().List(&api.QueryOptions{Filter: fmt.Sprintf("Name == %q", name)})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if len(stubs) == 0 {
		return nil, fmt.Errorf("node %s not registered yet", name)
	}
	node, _, err := c.API.Nodes().Info(stubs[0].ID, nil)
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	return node, nil
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
