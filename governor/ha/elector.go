package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// ErrRunning is returned by Run when the elector is already running.
var ErrRunning = errors.New("ha: elector already running")

// ErrResigned is returned by Run when the elector resigned before.
var ErrResigned = errors.New("ha: elector resigned")

// Member is one governor taking part in the election.
type Member struct {
	// ID is the member id (Config.MemberID).
	ID string `json:"id"`
	// URL is its advertised HTTP address (Config.AdvertiseURL).
	URL string `json:"url"`
}

// Status is the elector's view of the election.
type Status struct {
	// Leading is true while this elector holds the lock with a valid
	// lease (as of the moment the status was taken).
	Leading bool
	// Term is this elector's term while Leading; the zero Term otherwise.
	Term Term
	// Leader is the current leader as Consul's lock key names it (this
	// member while Leading); ID is empty while there is none or it is not
	// known yet.
	Leader Member
	// Epoch is the current leader's epoch; 0 while there is none.
	Epoch uint64
	// Since is when the Leading/Leader pair last changed (wall clock).
	Since time.Time
}

// Elector campaigns for leadership among the governors sharing a lock key
// in Consul. Create it with New, run Run in a goroutine, read Leading()
// right before each write and call Resign on shutdown.
type Elector struct {
	cfg    Config
	log    hclog.Logger
	consul *api.Client
	clock  Clock
	me     Member

	changes chan Status

	mu       sync.Mutex
	status   Status
	session  string   // current session id, "" when none
	stale    []string // abandoned sessions Consul could not be told to destroy
	running  bool
	resigned bool
	stopRun  context.CancelFunc // cancels the running campaign
	runDone  chan struct{}      // closed when Run returns
}

// New validates cfg (with defaults applied) and returns an elector that
// has not started campaigning.
func New(cfg Config, logger hclog.Logger) (*Elector, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := newConsulClient(cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Elector{cfg: cfg, log: logger.Named("ha").With("member", cfg.MemberID), consul: client,
		clock: realClock{}, me: Member{ID: cfg.MemberID, URL: cfg.AdvertiseURL}, changes: make(chan Status, 1)}, nil
}

// newConsulClient builds the Consul API client for cfg.
func newConsulClient(cfg Config) (*api.Client, error) {
	cc := api.DefaultNonPooledConfig()
	cc.Address = cfg.Address
	cc.Token = cfg.Token
	if cfg.TLS.enabled() {
		if !strings.Contains(cc.Address, "://") {
			cc.Scheme = "https"
		}
		cc.TLSConfig = api.TLSConfig{Address: cfg.TLS.ServerName, CAFile: cfg.TLS.CAFile,
			CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile}
	}
	client, err := api.NewClient(cc)
	if err != nil {
		return nil, fmt.Errorf("ha: consul client for %s: %w", cfg.Address, err)
	}
	return client, nil
}

// Self is this elector's member identity.
func (e *Elector) Self() Member { return e.me }

// Status returns the elector's current view. Leading is re-evaluated
// against the lease now.
func (e *Elector) Status() Status {
	e.mu.Lock()
	st := e.status
	e.mu.Unlock()
	if st.Leading && !st.Term.Valid() {
		st.Leading, st.Term = false, Term{}
	}
	return st
}

// Leading returns this elector's term and true only while it holds the
// lock and its lease is valid now on the monotonic clock.
func (e *Elector) Leading() (Term, bool) {
	st := e.Status()
	return st.Term, st.Leading
}

// Changes delivers the status each time leadership or the known leader
// changes. It holds one status: a slow reader misses intermediate ones and
// gets the latest. There is one channel per elector.
func (e *Elector) Changes() <-chan Status { return e.changes }

// setStatus records a new status and publishes it when the role or the
// leader changed.
func (e *Elector) setStatus(update func(*Status)) {
	e.mu.Lock()
	old := e.status
	update(&e.status)
	st := e.status
	changed := old.Leading != st.Leading || old.Leader != st.Leader || old.Epoch != st.Epoch
	if changed {
		e.status.Since = e.clock.Now().Round(0)
		st = e.status
	}
	e.mu.Unlock()
	if !changed {
		return
	}
	select { // keep only the newest status in the channel
	case <-e.changes:
	default:
	}
	select {
	case e.changes <- st:
	default:
	}
}

// Members lists the governors whose sessions are alive (each registers
// Key-members/<id> held by its session), sorted by id.
func (e *Elector) Members(ctx context.Context) ([]Member, error) {
	pairs, _, err := e.consul.KV().List(e.membersPrefix(), (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("ha: listing members: %w", err)
	}
	var out []Member
	for _, p := range pairs {
		if p.Session == "" {
			continue // its session is gone: a dead member
		}
		var m Member
		if err := json.Unmarshal(p.Value, &m); err != nil {
			e.log.Warn("ignoring unreadable member entry", "key", p.Key, "error", err)
			continue
		}
		if err := m.check(); err != nil {
			e.log.Warn("ignoring refused member entry", "key", p.Key, "error", err)
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (e *Elector) membersPrefix() string { return e.cfg.Key + "-members/" }
func (e *Elector) memberKey() string     { return e.membersPrefix() + e.cfg.MemberID }

// checkID names this member's TTL check on the agent; it includes a hash
// of the lock key, so members of two elections on one agent never share a
// check (a check turning critical invalidates every session bound to it).
func (e *Elector) checkID() string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(e.cfg.Key))
	return fmt.Sprintf("allot-ha-%s-%08x", e.cfg.MemberID, h.Sum32())
}

// Resign ends this elector's part in the election for good: it stops
// leading at once (Leading turns false and the term's Done closes), stops
// the campaign, releases the lock (a clean release: Consul applies no
// lock-delay, so a standby takes over at once), destroys the session and
// removes the member entry. Writers must have stopped before: a write that
// is still in flight may land after the next leader's first write.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	e.resigned = true
	term, stop, done := e.status.Term, e.stopRun, e.runDone
	e.mu.Unlock()
	if term.lease != nil {
		term.lease.end()
	}
	e.setStatus(func(s *Status) {
		if s.Leading {
			s.Leading, s.Term, s.Leader, s.Epoch = false, Term{}, Member{}, 0
		}
	})
	if stop != nil {
		stop()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("ha: resign: waiting for the campaign to stop: %w", ctx.Err())
		}
	}
	e.mu.Lock()
	sid := e.session
	e.session = ""
	e.mu.Unlock()
	if sid == "" {
		return nil
	}
	return e.release(ctx, sid)
}

// release releases the lock if sid holds it, destroys the session and
// removes this member's entry and check.
func (e *Elector) release(ctx context.Context, sid string) error {
	w := (&api.WriteOptions{}).WithContext(ctx)
	var errs []error
	if _, _, err := e.consul.KV().Release(&api.KVPair{Key: e.cfg.Key, Session: sid}, w); err != nil {
		errs = append(errs, fmt.Errorf("releasing %s: %w", e.cfg.Key, err))
	}
	if _, err := e.consul.Session().Destroy(sid, w); err != nil {
		errs = append(errs, fmt.Errorf("destroying session: %w", err))
	}
	if _, err := e.consul.KV().Delete(e.memberKey(), w); err != nil {
		errs = append(errs, fmt.Errorf("removing member entry: %w", err))
	}
	if e.cfg.CheckTTL > 0 {
		if err := e.consul.Agent().CheckDeregisterOpts(e.checkID(), (&api.QueryOptions{}).WithContext(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("deregistering check: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ha: resign: %w", err)
	}
	e.log.Info("resigned")
	return nil
}
