package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Nomad is what the recorder reads from Nomad.
type Nomad interface {
	// Allocations lists allocations of every namespace with their
	// allocated resources; filter (a Nomad filter expression) and
	// waitIndex (a blocking query) may be empty/zero.
	Allocations(ctx context.Context, filter string, waitIndex uint64, wait time.Duration) ([]*api.AllocationListStub, uint64, error)
	// Nodes lists nodes with their resources (devices and their health).
	Nodes(ctx context.Context) ([]*api.NodeListStub, error)
	// Namespaces lists namespaces with their meta.
	Namespaces(ctx context.Context) ([]*api.Namespace, error)
	// Blocked lists the blocked evaluations of every namespace: work
	// Nomad could not place for want of capacity.
	Blocked(ctx context.Context) ([]*api.Evaluation, error)
}

// NomadAPI reads Nomad through its HTTP API with the governor's token.
type NomadAPI struct {
	Client *api.Client
}

// Allocations implements Nomad.
func (n *NomadAPI) Allocations(ctx context.Context, filter string, waitIndex uint64, wait time.Duration) ([]*api.AllocationListStub, uint64, error) {
	q := (&api.QueryOptions{Namespace: "*", Filter: filter, WaitIndex: waitIndex, WaitTime: wait,
		Params: map[string]string{"resources": "true"}}).WithContext(ctx)
	out, meta, err := n.Client.Allocations().List(q)
	if err != nil {
		return nil, 0, fmt.Errorf("listing allocations: %w", err)
	}
	return out, meta.LastIndex, nil
}

// Nodes implements Nomad.
func (n *NomadAPI) Nodes(ctx context.Context) ([]*api.NodeListStub, error) {
	q := (&api.QueryOptions{Params: map[string]string{"resources": "true"}}).WithContext(ctx)
	out, _, err := n.Client.Nodes().List(q)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return out, nil
}

// Namespaces implements Nomad.
func (n *NomadAPI) Namespaces(ctx context.Context) ([]*api.Namespace, error) {
	out, _, err := n.Client.Namespaces().List((&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	return out, nil
}

// Blocked implements Nomad.
func (n *NomadAPI) Blocked(ctx context.Context) ([]*api.Evaluation, error) {
	q := (&api.QueryOptions{Namespace: "*", Filter: `Status == "blocked"`}).WithContext(ctx)
	out, _, err := n.Client.Evaluations().List(q)
	if err != nil {
		return nil, fmt.Errorf("listing blocked evaluations: %w", err)
	}
	return out, nil
}
