package allotapi

import (
	"context"
	"time"
)

// Pools is GET /allot/v1/pools: the devices of every node pool and model
// as the governor's live snapshot holds them now. Capacity is not tenant
// data: every caller gets the same per-pool totals, never who holds what.
type Pools struct {
	// At is the time of the snapshot.
	At    time.Time `json:"at"`
	Pools []Pool    `json:"pools"`
}

// Pool is one node pool and device model now, in devices:
// Capacity = Allocated + Idle + Down.
type Pool struct {
	Pool string `json:"pool"`
	// Model is "vendor/type/name".
	Model    string `json:"model"`
	Capacity int64  `json:"capacity"`
	// Allocated is held by allocations (running, or stopping until their
	// client reports them terminal).
	Allocated int64 `json:"allocated"`
	// Idle is healthy, on a ready and eligible node, and not allocated.
	Idle int64 `json:"idle"`
	// Down is unhealthy or on a node that is down, draining or
	// ineligible, and not allocated.
	Down int64 `json:"down"`
	// Reserved is what the pools' starving queue heads ask for of this
	// model: the capacity their reservations hold for them (a part of
	// Allocated and Idle, not beside them).
	Reserved int64 `json:"reserved_waiting"`
}

// Pools returns every pool and device model now (GET /allot/v1/pools).
func (c *Client) Pools(ctx context.Context) (*Pools, error) {
	var out Pools
	return &out, c.get(ctx, "/allot/v1/pools", &out)
}
