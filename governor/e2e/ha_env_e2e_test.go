//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/tcpproxy"
	"github.com/allot-sh/allot/internal/testcluster"
)

// HA test settings: short, so that a trial takes seconds (docs/ha.md has
// the production defaults). Benchmarks read HA_SESSION_TTL, HA_LOCK_DELAY
// and HA_CHECK_TTL ("0" for no check) to measure other settings.
const (
	haNS        = "ha"
	haLimitCPU  = 300 // the tenant's limit: three jobs at once
	haJobCPU    = 100
	haJobs      = 6 // submitted per trial, through the standby
	haInjectAt  = 2 // the failure is injected after this many submissions
	haSubmitGap = 250 * time.Millisecond
)

// haGov is one governor of the HA pair with its own way to Consul (a TCP
// proxy a test can break) and to Nomad (a recording proxy).
type haGov struct {
	name   string
	g      *testcluster.Governor
	consul *tcpproxy.Proxy
	api    *allotapi.Client
}

// haEnv is a Nomad cluster, a Consul dev agent and two governors.
type haEnv struct {
	t      testing.TB
	c      *testcluster.Cluster
	log    *writeLog
	govs   []*haGov
	dir    string
	seq    int
	peakMu sync.Mutex
	peak   int
	stop   context.CancelFunc
	opts   haEnvOptions
}

// haEnvOptions are what some HA tests add to the plain pair (zero value:
// no ACLs, nothing added to the governors' config).
type haEnvOptions struct {
	// ACL turns Nomad's ACLs on; the governors and the env's clients use
	// the management token.
	ACL bool
	// GovConfig returns extra governor config (HCL) for the governor name.
	GovConfig func(name string) string
}

func haSetting(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newHAEnv(t testing.TB) *haEnv { return newHAEnvWith(t, haEnvOptions{}) }

// newHAEnvWith is newHAEnv with options.
func newHAEnvWith(t testing.TB, o haEnvOptions) *haEnv {
	dir := t.TempDir()
	c := testcluster.New(t, testcluster.Options{ACL: o.ACL, Clients: []testcluster.ClientSpec{{Name: "ha-1"}}})
	consul := testcluster.StartConsul(t)
	e := &haEnv{t: t, c: c, log: &writeLog{}, dir: dir, opts: o}
	_, err := c.API.Namespaces().Register(&api.Namespace{Name: haNS, Meta: map[string]string{
		"allot.quota.cpu": fmt.Sprint(haLimitCPU), "allot.limit.cpu": fmt.Sprint(haLimitCPU)}}, nil)
	must.NoError(t, err)
	for _, name := range []string{"gov-a", "gov-b"} {
		e.govs = append(e.govs, e.startGov(name, consul.Addr()))
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	t.Cleanup(cancel)
	go e.sampleUsage(ctx)
	return e
}

// startGov starts one governor; the first one started creates the
// admission key, so they start one after the other.
func (e *haEnv) startGov(name, consulAddr string) *haGov {
	px, err := tcpproxy.New(consulAddr)
	must.NoError(e.t, err)
	e.t.Cleanup(func() { _ = px.Close() })
	checkTTL := haSetting("HA_CHECK_TTL", "2s")
	check := ""
	if checkTTL != "0" {
		check = fmt.Sprintf("check_ttl = %q", checkTTL)
	}
	cfg := fmt.Sprintf(`cycle_interval = "1s"
ha {
  consul { address = "http://%s" }
  session_ttl = %q
  lock_delay  = %q
  %s
  member_id   = %q
}
`, px.Addr(), haSetting("HA_SESSION_TTL", "10s"), haSetting("HA_LOCK_DELAY", "1s"), check, name) + e.extraConfig(name)
	p := filepath.Join(e.dir, name+".hcl")
	must.NoError(e.t, os.WriteFile(p, []byte(cfg), 0o644))
	nomad := recordingProxy(e.t, e.log, name, e.c.Addr())
	g := e.c.StartGovernorWith(testcluster.GovernorOptions{Name: name, NomadAddr: nomad, Args: []string{"-config", p}})
	return &haGov{name: name, g: g, consul: px, api: &allotapi.Client{Address: g.Addr, Token: e.c.ManagementToken()}}
}

// extraConfig is the governor config the options add for name.
func (e *haEnv) extraConfig(name string) string {
	var extra string
	if tok := e.c.ManagementToken(); tok != "" {
		extra = fmt.Sprintf("nomad {\n  token = %q\n}\n", tok)
	}
	if e.opts.GovConfig != nil {
		extra += e.opts.GovConfig(name) + "\n"
	}
	return extra
}

// sampleUsage records the tenant's peak usage (allocations Nomad runs or
// is about to run) until ctx ends.
func (e *haEnv) sampleUsage(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		allocs, _, err := e.c.API.Allocations().List((&api.QueryOptions{Namespace: haNS}).WithContext(ctx))
		if err != nil {
			continue
		}
		used := 0
		for _, a := range allocs {
			if a.DesiredStatus == api.AllocDesiredStatusRun &&
				(a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == api.AllocClientStatusRunning) {
				used += haJobCPU
			}
		}
		e.peakMu.Lock()
		if used > e.peak {
			e.peak = used
		}
		e.peakMu.Unlock()
	}
}

// peakUsage is the highest usage sampled so far.
func (e *haEnv) peakUsage() int {
	e.peakMu.Lock()
	defer e.peakMu.Unlock()
	return e.peak
}

// roles waits until one governor leads and the other stands by behind it,
// and returns them with the term.
func (e *haEnv) roles() (leader, standby *haGov, term uint64) {
	e.t.Helper()
	e.c.Eventually(90*time.Second, "one leader and one standby that knows it", func() error {
		var sts []*allotapi.Status
		for _, g := range e.govs {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := g.api.Status(ctx)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", g.name, err)
			}
			sts = append(sts, st)
		}
		a, b := sts[0], sts[1]
		switch {
		case a.Leading && !b.Leading && b.Leader != nil && b.Leader.ID == e.govs[0].name && b.Ready:
			leader, standby, term = e.govs[0], e.govs[1], a.Term
		case b.Leading && !a.Leading && a.Leader != nil && a.Leader.ID == e.govs[1].name && a.Ready:
			leader, standby, term = e.govs[1], e.govs[0], b.Term
		default:
			return fmt.Errorf("no settled roles yet: %s leading=%v leader=%v; %s leading=%v leader=%v",
				e.govs[0].name, a.Leading, a.Leader, e.govs[1].name, b.Leading, b.Leader)
		}
		return nil
	})
	return leader, standby, term
}

// waitLeads polls g's status every 20 ms until it leads in a term after
// old, and returns the term and when it was first seen leading.
func (e *haEnv) waitLeads(g *haGov, old uint64, timeout time.Duration) (uint64, time.Time) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := g.api.Status(ctx)
		cancel()
		if err == nil && st.Leading && st.Term > old {
			return st.Term, time.Now()
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s did not take over within %s (last status %+v, error %v); log:\n%s", g.name, timeout, st, err, g.g.Log(60))
		}
	}
	return 0, time.Time{}
}

// haJob is a short batch job of the tenant.
func haJob(id string) *api.Job {
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace = pointerTo(haNS)
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"2"})
	task.Resources = &api.Resources{CPU: pointerTo(haJobCPU), MemoryMB: pointerTo(32)}
	j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	return j
}

// submitted is the outcome of one job's submission.
type submitted struct {
	id       string
	attempts int // registrations sent (more than one after a 503)
	refusals int // 503/429 answers
	err      error
}

// submit registers jobs one after the other, every haSubmitGap, through
// via; a 503 or 429 is retried (that is the contract: nothing was done).
// started is closed after haInjectAt submissions.
func (e *haEnv) submit(via *haGov, ids []string, started chan<- struct{}) []submitted {
	client, err := api.NewClient(&api.Config{Address: via.g.Addr})
	if err != nil {
		close(started)
		return []submitted{{err: err}}
	}
	pace := time.NewTicker(haSubmitGap)
	defer pace.Stop()
	var out []submitted
	for i, id := range ids {
		out = append(out, register(client, id))
		if i+1 == haInjectAt {
			close(started)
		}
		<-pace.C
	}
	return out
}

// register submits the trial job id until it is accepted, retrying 503
// and 429 for up to a minute.
func register(client *api.Client, id string) submitted { return registerJob(client, haJob(id)) }

// registerJob submits job until it is accepted, retrying 503 and 429 for
// up to a minute.
func registerJob(client *api.Client, job *api.Job) submitted {
	s := submitted{id: *job.ID}
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	deadline := time.Now().Add(time.Minute)
	for {
		s.attempts++
		_, _, err := client.Jobs().Register(job, nil)
		var ue api.UnexpectedResponseError
		switch {
		case err == nil:
			return s
		case errors.As(err, &ue) && (ue.StatusCode() == 503 || ue.StatusCode() == 429):
			s.refusals++
		default:
			s.err = err
			return s
		}
		if time.Now().After(deadline) {
			s.err = fmt.Errorf("still refused after a minute: %w", err)
			return s
		}
		<-retry.C
	}
}

// readResult counts the queue reads of one trial.
type readResult struct {
	ok       int
	failures []string
}

// readQueue reads GET /allot/v1/queue from g every 100 ms until ctx ends.
func (e *haEnv) readQueue(ctx context.Context, g *haGov) readResult {
	var r readResult
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := g.api.Queue(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return r
		case err != nil:
			r.failures = append(r.failures, err.Error())
		default:
			r.ok++
		}
		select {
		case <-ctx.Done():
			return r
		case <-tick.C:
		}
	}
}

// waitAdmitted waits until every job is admitted (sealed state admitted,
// not stopped) as Nomad stores it.
func (e *haEnv) waitAdmitted(ids []string) {
	e.t.Helper()
	e.c.Eventually(2*time.Minute, "every job admitted", func() error {
		for _, id := range ids {
			j, _, err := e.c.API.Jobs().Info(id, &api.QueryOptions{Namespace: haNS})
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			if *j.Stop || j.Meta["allot.state"] != "admitted" {
				return fmt.Errorf("%s: stop=%v state=%q", id, *j.Stop, j.Meta["allot.state"])
			}
		}
		return nil
	})
}

// storedByUnanswered reports whether Nomad holds job id admitted by a
// write the log holds as unanswered (unansweredAdmission).
func (e *haEnv) storedByUnanswered(ws []nomadWrite, id string) bool {
	j, _, err := e.c.API.Jobs().Info(id, &api.QueryOptions{Namespace: haNS})
	if err != nil || *j.Stop || j.Meta["allot.state"] != "admitted" {
		return false
	}
	epoch, err := strconv.ParseUint(j.Meta["allot.epoch"], 10, 64)
	return err == nil && unansweredAdmission(ws, haNS+"/"+id, epoch)
}

// trialResult is one failover as measured through the governors.
type trialResult struct {
	kind             string
	oldTerm, newTerm uint64
	// failover: failure injected → the standby reports itself leading;
	// firstWrite: → the new term's first job write reached Nomad.
	failover, firstWrite time.Duration
	refusals             int
}

// trial runs one failover of kind (kill, stop, partition, graceful) while
// jobs stream in through the standby, and checks that every job ends
// admitted.
func (e *haEnv) trial(kind string) trialResult {
	e.t.Helper()
	leader, standby, term := e.roles()
	e.seq++
	ids := make([]string, haJobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d-%d", kind, e.seq, i)
	}
	started := make(chan struct{})
	results := make(chan []submitted, 1)
	go func() { results <- e.submit(standby, ids, started) }()
	readsCtx, stopReads := context.WithCancel(context.Background())
	reads := make(chan readResult, 1)
	go func() { reads <- e.readQueue(readsCtx, standby) }()
	<-started
	injected := time.Now()
	e.inject(kind, leader)
	newTerm, leadAt := e.waitLeads(standby, term, 2*time.Minute)
	e.recover(kind, leader)
	subs := <-results
	stopReads()
	rr := <-reads
	must.Positive(e.t, rr.ok)
	must.SliceEmpty(e.t, rr.failures, must.Sprintf("the standby answers GET /allot/v1/queue throughout the failover: %v", rr.failures))
	res := trialResult{kind: kind, oldTerm: term, newTerm: newTerm, failover: leadAt.Sub(injected)}
	for _, s := range subs {
		must.NoError(e.t, s.err, must.Sprintf("job %s: every submission succeeds, at worst after a 503", s.id))
		res.refusals += s.refusals
	}
	e.waitAdmitted(ids)
	if at, ok := firstWriteOf(e.log.snapshot(), newTerm); ok {
		res.firstWrite = at.Sub(injected)
	}
	// The recorder logs a write once Nomad's answer has passed back, a
	// moment after Nomad stored it: wait for the log to hold every
	// admission, then count them. A leader whose lease ran out gives up on
	// its write in flight, which Nomad may store all the same: a job with
	// no answered admitting write counts that one when Nomad holds it.
	var admitted map[string]int
	e.c.Eventually(30*time.Second, "every admission in the write log", func() error {
		ws := e.log.snapshot()
		admitted = admissions(ws)
		for _, s := range subs {
			key := haNS + "/" + s.id
			if admitted[key] > 0 {
				continue
			}
			if !e.storedByUnanswered(ws, s.id) {
				return fmt.Errorf("no admitting write of %s logged yet", s.id)
			}
			admitted[key] = 1
			e.t.Logf("job %s: admitted by a write its governor gave up on before Nomad answered", s.id)
		}
		return nil
	})
	for _, s := range subs {
		n := admitted[haNS+"/"+s.id]
		must.LessEq(e.t, s.attempts, n, must.Sprintf("job %s admitted %d times for %d registrations: double admission", s.id, n, s.attempts))
	}
	must.LessEq(e.t, haLimitCPU, e.peakUsage(), must.Sprint("the tenant never ran over its limit"))
	e.t.Logf("trial %s: term %d → %d, failover %s, first write of the new term after %s, %d refusals (503) on the way",
		kind, term, newTerm, res.failover.Round(time.Millisecond), res.firstWrite.Round(time.Millisecond), res.refusals)
	return res
}

// inject makes the leader fail the way kind says.
func (e *haEnv) inject(kind string, leader *haGov) {
	switch kind {
	case "kill":
		leader.g.Kill()
	case "stop":
		must.NoError(e.t, leader.g.Signal(syscall.SIGSTOP))
	case "partition":
		leader.consul.Break()
	case "graceful":
		must.NoError(e.t, leader.g.Signal(syscall.SIGTERM))
	default:
		e.t.Fatalf("unknown failure %q", kind)
	}
}

// recover brings the old leader back as a standby once the other leads.
func (e *haEnv) recover(kind string, old *haGov) {
	switch kind {
	case "kill":
		old.g.Start()
	case "stop":
		must.NoError(e.t, old.g.Signal(syscall.SIGCONT))
	case "partition":
		old.consul.Heal()
	case "graceful":
		must.NoError(e.t, old.g.WaitExit(30*time.Second))
		old.g.Start()
	}
}

// checkWriteLog asserts the fencing invariant over every write so far.
func (e *haEnv) checkWriteLog() {
	e.t.Helper()
	ws := e.log.snapshot()
	v := fencingViolations(ws)
	kinds := map[string]int{}
	for _, w := range ws {
		k := w.Method + " " + w.State
		if w.State == "" {
			k = w.Method + " " + w.Path
		}
		kinds[fmt.Sprintf("%s by %s (status %d)", k, w.Gov, w.Status)]++
	}
	e.t.Logf("write log: %d writes, %d fencing violations; %v", len(ws), len(v), kinds)
	must.SliceEmpty(e.t, v, must.Sprint("no write of an older term after a newer term's first write"))
}

// distribution renders min/p50/p99/max of ds.
func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pick := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	return fmt.Sprintf("n=%d min %s p50 %s p99 %s max %s", len(s), r(s[0]), r(pick(0.5)), r(pick(0.99)), r(s[len(s)-1]))
}
