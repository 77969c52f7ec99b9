package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/hahttp"
)

// retryAfterNoLeader is the Retry-After of a 503 while there is no leader.
const retryAfterNoLeader = "1"

// Leadership says which governor admits (HA). Without one (nil) this
// governor admits everything itself.
type Leadership interface {
	// Admitter returns, when this governor leads now, its term and the end
	// of its lease (lead true); otherwise the leader's advertise URL, nil
	// when no leader is known.
	Admitter() (lead bool, epoch uint64, deadline time.Time, leader *url.URL)
	// Hold is the last look before an admission write is sent: ok when
	// this governor still leads in term epoch with a valid lease. release,
	// called once the write returned, lets a leader that steps down wait
	// for its writes in flight.
	Hold(epoch uint64) (release func(), ok bool)
	// MemberID names this governor (hahttp.ForwardedHeader).
	MemberID() string
}

// leaderForwarder forwards admission requests to the leader's advertise
// URL, the caller's headers (its token) unchanged.
type leaderForwarder struct {
	tr  http.RoundTripper
	log hclog.Logger
}

// epochKey carries the term a leader admits under in a request's context.
type epochKey struct{}

// lease is the term and deadline a leader admits one request under.
type lease struct {
	epoch    uint64
	deadline time.Time
}

// routeHA decides where an admission request or a namespace write goes
// under HA: on the leader it returns r with its term in the context
// (handled here); on a standby it forwards r to the leader, or answers 503
// with Retry-After when there is none, and returns nil. Nothing reaches
// Nomad from a standby.
func (p *Proxy) routeHA(w http.ResponseWriter, r *http.Request) *http.Request {
	if p.lead == nil {
		return r
	}
	lead, epoch, deadline, leader := p.lead.Admitter()
	switch {
	case lead:
		return r.WithContext(context.WithValue(r.Context(), epochKey{}, lease{epoch: epoch, deadline: deadline}))
	case leader == nil:
		noLeader(w, "no governor leads now (an election is under way)")
	case r.Header.Get(hahttp.ForwardedHeader) != "":
		noLeader(w, "the leader this request was forwarded to no longer leads")
	default:
		p.toLeader(w, r, leader)
	}
	return nil
}

// toLeader forwards r to the leader. A leader that cannot be reached is a
// 503: the caller retries, nothing was admitted here.
func (p *Proxy) toLeader(w http.ResponseWriter, r *http.Request, leader *url.URL) {
	rp := httputil.NewSingleHostReverseProxy(leader)
	rp.Transport = p.fwd.tr
	rp.FlushInterval = -1
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.fwd.log.Warn("forwarding a write to the leader", "leader", leader.String(), "path", r.URL.Path, "error", err)
		noLeader(w, "the leader could not be reached")
	}
	r.Header.Set(hahttp.ForwardedHeader, p.lead.MemberID())
	rp.ServeHTTP(w, r)
}

// noLeader answers 503 with Retry-After: the request was not sent to
// Nomad.
func noLeader(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", retryAfterNoLeader)
	http.Error(w, fmt.Sprintf("allot-governor: %s; nothing was sent to Nomad, retry in a moment", why), http.StatusServiceUnavailable)
}

// epochOf is the term r is admitted under (0 without HA).
func epochOf(r *http.Request) uint64 {
	l, _ := r.Context().Value(epochKey{}).(lease)
	return l.epoch
}

// fence bounds a write to Nomad sent for r by the leader's lease: the
// lease must still hold, for the same term, right before the write; its
// context ends at the deadline, and the write carries the term. done
// follows the write.
func (p *Proxy) fence(ctx context.Context, h http.Header) (context.Context, func(), error) {
	l, ok := ctx.Value(epochKey{}).(lease)
	if !ok || p.lead == nil {
		return ctx, func() {}, nil
	}
	release, ok := p.lead.Hold(l.epoch)
	if !ok {
		return ctx, func() {}, refuse(http.StatusServiceUnavailable,
			"this governor lost the lead before the write was sent; nothing was sent to Nomad, retry in a moment")
	}
	h.Set(hahttp.EpochHeader, strconv.FormatUint(l.epoch, 10))
	ctx, cancel := context.WithDeadline(ctx, l.deadline)
	return ctx, func() { cancel(); release() }, nil
}
