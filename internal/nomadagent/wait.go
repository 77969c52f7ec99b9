package nomadagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

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

// pollInterval is how often readiness is re-checked.
const pollInterval = 100 * time.Millisecond

// WaitLeader waits until the cluster behind client has elected a leader.
func WaitLeader(ctx context.Context, client *api.Client) error {
	err := Poll(ctx, pollInterval, func() error {
		leader, err := client.Status().Leader()
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

// NodeCheck is an extra readiness condition on a node.
type NodeCheck func(*api.Node) error

// WaitNodeReady waits until the node called name is registered and ready,
// has every named driver detected and healthy, and passes extra (if set).
// It returns the node as last read.
func WaitNodeReady(ctx context.Context, client *api.Client, name string, drivers []string, extra NodeCheck) (*api.Node, error) {
	var node *api.Node
	err := Poll(ctx, pollInterval, func() error {
		n, err := NodeByName(client, name)
		if err != nil {
			return err
		}
		node = n
		return NodeReady(n, drivers, extra)
	})
	if err != nil {
		return node, fmt.Errorf("waiting for node %s to be ready: %w", name, err)
	}
	return node, nil
}

// NodeReady reports why a node is not ready yet, or nil.
func NodeReady(node *api.Node, drivers []string, extra NodeCheck) error {
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

// NodeByName returns the full node registered under name.
func NodeByName(client *api.Client, name string) (*api.Node, error) {
	stubs, _, err := client.Nodes().List(&api.QueryOptions{Filter: fmt.Sprintf("Name == %q", name)})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if len(stubs) == 0 {
		return nil, fmt.Errorf("node %s not registered yet", name)
	}
	node, _, err := client.Nodes().Info(stubs[0].ID, nil)
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	return node, nil
}

// StopAllJobs deregisters every job in every namespace and waits until no
// allocation is pending or running, so tasks end through Nomad (and, for
// the ckpt driver, checkpoint) before agents go away.
func StopAllJobs(ctx context.Context, client *api.Client) error {
	q := &api.QueryOptions{Namespace: "*"}
	jobs, _, err := client.Jobs().List(q)
	if err != nil {
		return fmt.Errorf("listing jobs: %w", err)
	}
	for _, j := range jobs {
		if _, _, err := client.Jobs().Deregister(j.ID, false, &api.WriteOptions{Namespace: j.Namespace}); err != nil {
			return fmt.Errorf("stopping job %s/%s: %w", j.Namespace, j.ID, err)
		}
	}
	return Poll(ctx, pollInterval, func() error {
		allocs, _, err := client.Allocations().List(q)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusPending {
				return fmt.Errorf("alloc %s of %s still %s", a.ID[:8], a.JobID, a.ClientStatus)
			}
		}
		return nil
	})
}
