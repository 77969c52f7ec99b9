package allotapi

import (
	"context"
	"time"
)

// Status is GET /allot/v1/status: the governor answering and, under HA
// (docs/ha.md), the leader, its term and the members.
type Status struct {
	// HA is false for a single governor (no ha block): it always acts.
	HA bool `json:"ha"`
	// Member is the id of the governor that answered.
	Member string `json:"member,omitempty"`
	// Leading tells whether the answering governor leads now.
	Leading bool `json:"leading"`
	// Term is the current leader term as the answering governor knows it
	// (0: none yet).
	Term uint64 `json:"term"`
	// Leader is the current leader (nil: none known).
	Leader *Member `json:"leader,omitempty"`
	// Since is when the answering governor learned of the current leader
	// (or of the lack of one).
	Since time.Time `json:"since"`
	// Members are the governors registered in Consul (live sessions).
	Members []Member `json:"members"`
	// MembersError says why the members could not be listed.
	MembersError string `json:"members_error,omitempty"`
	// Ready and Reason are what GET /readyz answers.
	Ready  bool   `json:"ready"`
	Reason string `json:"reason"`
}

// Member is one governor.
type Member struct {
	ID string `json:"id"`
	// URL is the member's advertise URL.
	URL string `json:"url"`
	// Leader marks the current leader.
	Leader bool `json:"leader,omitempty"`
}

// Status returns the governor's HA status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var out Status
	return &out, c.get(ctx, "/allot/v1/status", &out)
}
