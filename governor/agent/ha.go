package agent

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/ha"
)

// leadership is this governor's part in the election (docs/ha.md), as
// the other parts see it: the actuator's Fence, the proxy's Leadership and
// the server's HA. It leads only while the elector holds a valid lease
// AND the term's rebuild from Nomad finished (rebuilt), and not once it
// steps down (stopping). Writes in flight are counted, so a leader that
// steps down waits for them before it gives the lock up.
type leadership struct {
	e    *ha.Elector
	self ha.Member

	mu       sync.Mutex
	rebuilt  uint64
	stopping bool
	inflight sync.WaitGroup
}

// haConfig maps the governor's ha block onto the elector's configuration.
func haConfig(h config.HA) ha.Config {
	return ha.Config{Address: h.Consul.Address, Token: h.Consul.Token,
		TLS: ha.TLSConfig{CAFile: h.Consul.CACert, CertFile: h.Consul.ClientCert, KeyFile: h.Consul.ClientKey,
			ServerName: h.Consul.TLSServerName},
		Key: h.LockKey, SessionTTL: h.SessionTTL, LockDelay: h.LockDelay, CheckTTL: h.CheckTTL,
		MemberID: h.MemberID, AdvertiseURL: h.Advertise}
}

func newLeadership(h config.HA, log hclog.Logger) (*leadership, error) {
	e, err := ha.New(haConfig(h), log)
	if err != nil {
		return nil, err
	}
	return &leadership{e: e, self: e.Self()}, nil
}

// term is the current term when this governor may act in it.
func (l *leadership) term() (ha.Term, bool) {
	t, ok := l.e.Leading()
	if !ok {
		return ha.Term{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping || l.rebuilt != t.Epoch {
		return ha.Term{}, false
	}
	return t, true
}

// Lease implements actuate.Fence.
func (l *leadership) Lease() (uint64, time.Time, bool) {
	t, ok := l.term()
	if !ok {
		return 0, time.Time{}, false
	}
	return t.Epoch, t.Deadline(), true
}

// Hold implements actuate.Fence and proxy.Leadership: the last look
// before a write, counted until release.
func (l *leadership) Hold(epoch uint64) (func(), bool) {
	t, ok := l.e.Leading()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok || l.stopping || l.rebuilt != epoch || t.Epoch != epoch {
		return nil, false
	}
	l.inflight.Add(1)
	var once sync.Once
	return func() { once.Do(l.inflight.Done) }, true
}

// Admitter implements proxy.Leadership.
func (l *leadership) Admitter() (bool, uint64, time.Time, *url.URL) {
	if t, ok := l.term(); ok {
		return true, t.Epoch, t.Deadline(), nil
	}
	st := l.e.Status()
	if st.Leader.ID == "" || st.Leader.ID == l.self.ID {
		return false, 0, time.Time{}, nil // none, or this governor between two states
	}
	u, err := st.Leader.Endpoint()
	if err != nil {
		return false, 0, time.Time{}, nil // the elector logged the refused URL
	}
	return false, 0, time.Time{}, u
}

// MemberID implements proxy.Leadership.
func (l *leadership) MemberID() string { return l.self.ID }

// State implements server.HA.
func (l *leadership) State() allotapi.Status {
	st := l.e.Status()
	out := allotapi.Status{HA: true, Member: l.self.ID, Term: st.Epoch, Since: st.Since}
	_, out.Leading = l.term()
	if st.Leader.ID != "" && (st.Leader.ID != l.self.ID || out.Leading) {
		out.Leader = &allotapi.Member{ID: st.Leader.ID, URL: st.Leader.URL, Leader: true}
	}
	return out
}

// Members implements server.HA.
func (l *leadership) Members(ctx context.Context) ([]allotapi.Member, error) {
	ms, err := l.e.Members(ctx)
	if err != nil {
		return nil, err
	}
	leader := l.e.Status().Leader.ID
	out := make([]allotapi.Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, allotapi.Member{ID: m.ID, URL: m.URL, Leader: m.ID == leader})
	}
	return out, nil
}

// setRebuilt lets this governor act in term epoch: its state was rebuilt
// from Nomad in that term.
func (l *leadership) setRebuilt(epoch uint64) {
	l.mu.Lock()
	l.rebuilt = epoch
	l.mu.Unlock()
}

// stepDown stops every new write, waits (until ctx ends) for the writes
// in flight, then resigns: the lock is released at once, so a standby
// takes over without lock-delay (graceful handover).
func (l *leadership) stepDown(ctx context.Context, log hclog.Logger) {
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		log.Warn("writes still in flight at shutdown; resigning anyway (they end by the lease deadline)")
	}
	if err := l.e.Resign(ctx); err != nil {
		log.Warn("resigning the lead", "error", err)
	}
}
