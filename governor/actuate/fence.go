package actuate

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/hahttp"
)

// Fence is the leader's lease (governor/ha through the agent).
type Fence interface {
	// Lease returns this governor's current term and the end of its lease
	// on the monotonic clock; ok is false when it does not lead now (or
	// its lease may have expired).
	Lease() (epoch uint64, deadline time.Time, ok bool)
	// Hold is the last look before a write is sent: ok when this governor
	// still leads in term epoch with a valid lease. release, called once
	// the write returned, lets a leader that steps down wait for its
	// writes in flight before it gives up the lock.
	Hold(epoch uint64) (release func(), ok bool)
}

// fenced returns ctx bounded by the lease's deadline and the term it
// writes under (0 without a Fence). ErrNotLeader when it does not lead.
func (a *Actuator) fenced(ctx context.Context) (context.Context, uint64, context.CancelFunc, error) {
	if a.Fence == nil {
		return ctx, 0, func() {}, nil
	}
	epoch, deadline, ok := a.Fence.Lease()
	if !ok {
		return ctx, 0, func() {}, ErrNotLeader
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	return ctx, epoch, cancel, nil
}

// hold is the last look before a write is sent: the lease of the term
// the write carries must still hold. release follows the write.
func (a *Actuator) hold(epoch uint64) (func(), error) {
	if a.Fence == nil {
		return func() {}, nil
	}
	release, ok := a.Fence.Hold(epoch)
	if !ok {
		return func() {}, ErrNotLeader
	}
	return release, nil
}

// writeOpts are the options of one write: namespace, context, and the
// term in hahttp.EpochHeader (when there is one).
func writeOpts(ctx context.Context, ns string, epoch uint64) *api.WriteOptions {
	o := &api.WriteOptions{Namespace: ns}
	if epoch > 0 {
		o.Headers = map[string]string{hahttp.EpochHeader: strconv.FormatUint(epoch, 10)}
	}
	return o.WithContext(ctx)
}
