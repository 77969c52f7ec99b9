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
	// BorrowHolds lists the cohorts whose lending a starved queue head
	// holds, by cohort name: those with a tenant the caller may read.
	BorrowHolds []BorrowHold `json:"borrow_holds"`
}

// BorrowHold is a cohort whose lending a starved queue head holds (its
// tenant is far below its nominal quota and it has waited longer than the
// starvation timeout): no other job of the cohort may borrow, unless it
// ends before Start, until the head is admitted. Jobs within their
// tenant's nominal quota are not held back.
type BorrowHold struct {
	Cohort string `json:"cohort"`
	// Job is the head's "namespace/id", "(hidden)" when the caller may
	// not read its namespace.
	Job string `json:"job"`
	// Start is when, by the run times of what the cohort's borrowers run,
	// the head may borrow enough; absent when unknown.
	Start *time.Time `json:"start,omitempty"`
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
