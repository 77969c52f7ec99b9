package cluster

import (
	"context"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// A new leader catches its warm store up with Nomad instead of listing
// the whole cluster again (governor/agent, catch-up barrier). What it must
// know is how far Nomad has moved; these two reads tell it, at two costs.

// TableIndex is the highest Raft index of Nomad's jobs (and job
// summaries), allocations, evaluations and nodes tables: the index every
// change of those tables is at most at. Each table costs one listing of
// one entry (per_page=1): a blocking-query-free read whose X-Nomad-Index
// is the table's index. Deletions that publish no event (garbage
// collection) move these indexes too, so an idle cluster can sit above
// the last event the stream delivered: ObjectIndex then tells.
func (n *NomadSource) TableIndex(ctx context.Context) (uint64, error) {
	q := func() *api.QueryOptions {
		return (&api.QueryOptions{Namespace: "*", PerPage: 1}).WithContext(ctx)
	}
	var max uint64
	for _, read := range []struct {
		table string
		list  func() (*api.QueryMeta, error)
	}{
		{"jobs", func() (*api.QueryMeta, error) { _, m, err := n.Client.Jobs().List(q()); return m, err }},
		{"allocations", func() (*api.QueryMeta, error) { _, m, err := n.Client.Allocations().List(q()); return m, err }},
		{"evaluations", func() (*api.QueryMeta, error) { _, m, err := n.Client.Evaluations().List(q()); return m, err }},
		{"nodes", func() (*api.QueryMeta, error) { _, m, err := n.Client.Nodes().List(q()); return m, err }},
	} {
		meta, err := read.list()
		if err != nil {
			return 0, fmt.Errorf("reading the index of Nomad's %s: %w", read.table, err)
		}
		max = maxIndex(max, meta.LastIndex)
	}
	return max, nil
}

// ObjectIndex is the highest ModifyIndex of the jobs, allocations,
// evaluations and nodes Nomad holds now: the index of the newest change
// to anything that still exists, each of which the event stream delivered
// (at that index) unless Nomad publishes no event for it. Deletions do
// not count. It lists the stubs of every table (four reads, no read per
// job).
func (n *NomadSource) ObjectIndex(ctx context.Context) (uint64, error) {
	q := (&api.QueryOptions{Namespace: "*"}).WithContext(ctx)
	var max uint64
	jobs, _, err := n.Client.Jobs().List(q)
	if err != nil {
		return 0, fmt.Errorf("listing jobs: %w", err)
	}
	for _, j := range jobs {
		max = maxIndex(max, j.ModifyIndex)
	}
	aq := (&api.QueryOptions{Namespace: "*", Params: map[string]string{"task_states": "false"}}).WithContext(ctx)
	allocs, _, err := n.Client.Allocations().List(aq)
	if err != nil {
		return 0, fmt.Errorf("listing allocations: %w", err)
	}
	for _, a := range allocs {
		max = maxIndex(max, a.ModifyIndex)
	}
	evals, _, err := n.Client.Evaluations().List(q)
	if err != nil {
		return 0, fmt.Errorf("listing evaluations: %w", err)
	}
	for _, e := range evals {
		max = maxIndex(max, e.ModifyIndex)
	}
	nodes, _, err := n.Client.Nodes().List(q)
	if err != nil {
		return 0, fmt.Errorf("listing nodes: %w", err)
	}
	for _, nd := range nodes {
		max = maxIndex(max, nd.ModifyIndex)
	}
	return max, nil
}

func maxIndex(a, b uint64) uint64 {
	if b > a {
		return b
	}
	return a
}
