package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// preemptState is the preemption bookkeeping of one cycle.
type preemptState struct {
	// requeued marks jobs this plan requeues (victims, gang timeouts).
	requeued map[string]bool
	// pool is every job that may be a victim, cheapest first; built on
	// first use.
	pool []*victim
	// byCohort holds the pool split by the victims' cohort, same order.
	byCohort map[*cohort][]*victim
	// stopping are live allocations of held or stopped jobs: Nomad is
	// stopping them, so their resources are about to be free.
	stopping []*Alloc
	// stoppingUse is what the stopping allocations hold, by tenant.
	stoppingUse map[*account]quota.Vector
	built       bool
	// owed holds the preemptors whose victims were requeued recently.
	owed map[string]bool
	// failed remembers preemptor shapes that found no victims while the
	// cohort's usage did not change.
	failed map[string]noVictims
	// lostTo holds, per tenant, the tenants whose preemptions requeued
	// its jobs within reclaimWindow (fairpreempt.go; built on first use).
	lostTo map[string]map[string]bool
	// planLost holds, per tenant, the tenants whose preemptions in this
	// plan took its capacity (moves aside: the moved keep it).
	planLost map[string]map[string]bool
	// ents holds the cohorts' entitlements (entitlement.go; built on
	// first use).
	ents map[*cohort]entitlement
	// demand holds what each account's jobs ask for (entitlement.go;
	// built on first use).
	demand map[*account]quota.Vector
	// claims holds, by "ns/id", when each job the cycle judged a claim
	// became one; judged marks every job the cycle judged, claim or not
	// (claims.go).
	claims map[string]time.Time
	judged map[string]bool
	// taken holds, by victim tenant and preemptor tenant, when this
	// cycle's preemptions requeued jobs of the one for the other
	// (taken.go).
	taken map[string]map[string]time.Time
	// moveHolds holds, by head, the nodes this cycle's moves emptied for
	// it (moveholds.go).
	moveHolds map[string]MoveHold
}

func newPreemptState() preemptState {
	return preemptState{requeued: map[string]bool{}, failed: map[string]noVictims{},
		claims: map[string]time.Time{}, judged: map[string]bool{}}
}

// noVictims is a preemptor shape's failed search: the cohort's usage
// version it held for, and why a reclaim waits for borrowers
// (reclaimWait; "" when it does not).
type noVictims struct {
	version uint64
	why     string
	// claim: the search was a reclaim (claims.go); until is the end of
	// its wait that why names ("" when it names none): each job of the
	// shape has its own (sameShapeWhy).
	claim bool
	until string
}

// sameShapeWhy is f's reason for job j: f.why with j's own end of the
// wait for borrowers in place of the one f's search found.
func (cy *cycle) sameShapeWhy(f noVictims, j *Job) string {
	i := strings.LastIndex(f.why, f.until)
	if f.until == "" || i < 0 {
		return f.why
	}
	return f.why[:i] + cy.claimUntil(j) + f.why[i+len(f.until):]
}

// reclaimWindow is how long after a preemption its preemptor goes first
// in the queue: the resources its victims free are its own, and no job
// that outranks it (say, a higher class borrowing from the cohort) may
// take them back — the reclaim loop Kueue and Volcano users report.
const reclaimWindow = 5 * time.Minute

// owedPreemptors returns the queued jobs whose victims were requeued for
// them within reclaimWindow (victims name them in allot.preempted-by).
func (cy *cycle) owedPreemptors(jobs []*Job) map[string]bool {
	owed := map[string]bool{}
	cy.pre.owed = owed
	for _, j := range jobs {
		if j.State == Queued && j.PreemptedBy != "" && requeuedWithin(j, cy.s.Now, reclaimWindow) {
			owed[lastPreemptor(j)] = true
		}
	}
	return owed
}

// takerRest is how long a job whose preemption requeued another
// tenant's job is no victim of its own tenant's higher classes. Without
// it the job that just took, having run least, was their cheapest victim:
// on the simulator's standard week (load 1.5, seed 4) 159 of 790
// priority victims had taken other tenants' jobs within 30 minutes, 257
// victims between them, e.g. a 64-GPU low gang, its tenant's starved
// head, taking eight jobs and then stopped for its tenant's 8-GPU job,
// six times in five hours (docs/simulator.md, round 48). Their victims
// lost their work for nothing.
const takerRest = 30 * time.Minute

// takers returns the jobs whose preemption requeued a job of another
// tenant within takerRest (the victims' allot.preempted-by names them).
func takers(jobs []*Job, now time.Time) map[string]bool {
	out := map[string]bool{}
	for _, j := range jobs {
		if j.PreemptedBy == "" || !requeuedWithin(j, now, takerRest) {
			continue
		}
		if by := lastPreemptor(j); !strings.HasPrefix(by, j.Namespace+"/") {
			out[by] = true
		}
	}
	return out
}

// victim is a running job preemption may requeue, with what it holds.
type victim struct {
	j     *Job
	key   string
	acct  *account
	class string
	prio  int
	// lost sums, over the victim's allocations, the time since each
	// one's last checkpoint (Decision.LostWork, the API's and the
	// metric's figure). The checkpoint rules (FairLostWork) judge it, so
	// a gang of n allocations counts n times its work: judged by its
	// work alone, gangs became victims of fair share and moves, and
	// load 0.9 threw away more work (docs/simulator.md, round 15).
	lost time.Duration
	// work is the job's work lost, the most of any of its allocations
	// (a gang's allocations work together): what its reason says.
	work time.Duration
	// cost is the device time thrown away: each allocation's lost work
	// times its device instances (at least one). Victims are ranked by
	// it, so a 64-GPU job 100 hours into its run is the costliest of
	// victims, not one among many that lose more than 30 minutes.
	cost time.Duration
	// thrown is cost unless the job saves a checkpoint when stopped
	// (Group.SavesOnStop): zero then.
	thrown time.Duration
	// saves: the job saves a checkpoint when stopped (Group.SavesOnStop).
	saves bool
	// took: the job's preemption requeued another tenant's job within
	// takerRest (takers).
	took   bool
	newest time.Time
	use    quota.Vector
	allocs []*Alloc
}

// build collects the victim pool and the stopping allocations once per
// cycle. Victims: admitted or direct jobs of governed tenants, in a
// preemptible class other than production, holding live allocations.
func (cy *cycle) buildPool() {
	ps := &cy.pre
	if ps.built {
		return
	}
	ps.built = true
	took := takers(cy.jobs, cy.s.Now)
	for _, j := range cy.jobs {
		switch j.State {
		case Queued, Stopped:
			cy.addStopping(liveAllocs(cy.byJob[idOf(j)]))
		case Admitted, Direct:
			if v := cy.newVictim(j); v != nil {
				v.took = took[v.key]
				ps.pool = append(ps.pool, v)
			}
		}
	}
	cy.addStopping(stoppingAllocs(cy.s.Allocs))
	sort.Slice(ps.pool, func(a, b int) bool { return victimLess(ps.pool[a], ps.pool[b]) })
	ps.byCohort = map[*cohort][]*victim{}
	for _, v := range ps.pool {
		ps.byCohort[v.acct.cohort] = append(ps.byCohort[v.acct.cohort], v)
	}
}

// stoppingAllocs returns the allocations Nomad is stopping that still
// hold their resources (Alloc.Stopping).
func stoppingAllocs(in []*Alloc) []*Alloc {
	var out []*Alloc
	for _, a := range in {
		if a.Stopping {
			out = append(out, a)
		}
	}
	return out
}

func liveAllocs(in []*Alloc) []*Alloc {
	var out []*Alloc
	for _, a := range in {
		if a.Live {
			out = append(out, a)
		}
	}
	return out
}

// newVictim describes j as a possible victim; nil when it may not be one.
func (cy *cycle) newVictim(j *Job) *victim {
	acct := cy.accts[j.Namespace]
	// A job that needs its submitter's Vault/Consul token cannot be
	// requeued by the governor's write (audit #19): never a victim.
	if acct == nil || j.NeedsToken || cy.pre.requeued[j.Key()] || cy.held[j.Key()] {
		return nil
	}
	name := cy.victimClass(j, acct)
	cl, ok := cy.cfg.Classes[name]
	if !ok || !cl.Preemptible || name == "production" {
		return nil
	}
	v := &victim{j: j, key: j.Key(), acct: acct, class: name, prio: cl.Priority, use: quota.Vector{}}
	for _, a := range cy.byJob[idOf(j)] {
		if a.Live && !cy.replaced[a.ID] {
			v.allocs = append(v.allocs, a)
		}
	}
	for _, a := range v.allocs {
		v.use.Add(allocVector(a))
		lw := lostWork(a, cy.s.Now)
		v.lost += lw
		if lw > v.work {
			v.work = lw
		}
		v.cost += lw * time.Duration(instances(a))
		if a.StartedAt.After(v.newest) {
			v.newest = a.StartedAt
		}
	}
	if len(v.allocs) == 0 {
		return nil
	}
	v.saves = j.savesOnStop()
	if !v.saves {
		v.thrown = v.cost
	}
	return v
}

// victimClass is the class job j is protected by as a victim: its own
// when the class exists and its tenant may use it, else its tenant's
// default class. A class written into a job that did not go through
// admission (a dispatched or periodic child inheriting its parent's meta,
// a job written straight to Nomad) protects nothing (audit #4, #23).
func (cy *cycle) victimClass(j *Job, acct *account) string {
	name := cy.className(j)
	if cl, ok := cy.cfg.Classes[name]; ok && acct.t.MayUse(name, cl.Restricted) {
		return name
	}
	if acct.t.DefaultClass != "" {
		return acct.t.DefaultClass
	}
	return quota.DefaultClassName
}

// lostWork is the work allocation a loses when stopped now: the time
// since its last checkpoint, or since its start when it never saved one.
func lostWork(a *Alloc, now time.Time) time.Duration {
	from := a.StartedAt
	if a.LastCheckpoint.After(from) {
		from = a.LastCheckpoint
	}
	if from.IsZero() || !now.After(from) {
		return 0
	}
	return now.Sub(from)
}

// instances is how many device instances allocation a holds, at least
// one (a job without devices still loses its work).
func instances(a *Alloc) int {
	if n := deviceCount(a); n > 0 {
		return n
	}
	return 1
}

// deviceTime is what a victim's reason adds to its work lost when the
// job holds several device instances: the device time thrown away
// (" (6380 device-hours)"); "" otherwise.
func deviceTime(v *victim) string {
	switch h := v.cost.Hours(); {
	case v.cost <= v.work:
		return ""
	case h < 10:
		return fmt.Sprintf(" (%.1f device-hours)", h)
	default:
		return fmt.Sprintf(" (%.0f device-hours)", h)
	}
}

// victimLess orders victims cheapest first: lowest class, then least
// device time lost, then the tenant with the largest weighted share (it
// gives back first), then newest, then by key.
func victimLess(a, b *victim) bool {
	switch {
	case a.prio != b.prio:
		return a.prio < b.prio
	case a.cost != b.cost:
		return a.cost < b.cost
	case a.acct.share != b.acct.share:
		return a.acct.share > b.acct.share
	case !a.newest.Equal(b.newest):
		return a.newest.After(b.newest)
	}
	return jobLess(a.j, b.j)
}

// tryPreempt looks for victims that let queued job j run when its first
// failing check is limit, quota or fit. It returns the reason to show and
// whether preemption (or stopping jobs) will make room.
func (cy *cycle) tryPreempt(j *Job, acct *account, checks []Check) (string, bool) {
	failed := firstFailed(checks)
	if cy.cfg.DisablePreemption || cy.jobs == nil || failed == nil || failed.Permanent ||
		(failed.Name != "limit" && failed.Name != "quota" && failed.Name != "fit") {
		return "", false
	}
	memoKey := j.Namespace + "\x00" + cy.className(j) + "\x00" + shapeKey(j, cy.missing(j))
	if cy.starvedHeads[j] {
		memoKey += "\x00head"
	}
	if cy.reclaimWaited(j) {
		memoKey += "\x00waited" // reclaimable: the reclaim rules no longer spare
	}
	if f, ok := cy.pre.failed[memoKey]; ok && f.version == acct.cohort.version {
		cy.markClaim(j, f.claim)
		return cy.sameShapeWhy(f, j), false
	}
	cy.buildPool()
	s := cy.newTrial(j, acct)
	// A preemptor whose victims are still stopping waits for them rather
	// than preempting more; its tenant's later jobs count its claim.
	if cy.pre.owed[j.Key()] && len(cy.pre.stopping) > 0 {
		if fit, ok := s.placeWithout(nil, true); ok {
			if acct.claimed == nil {
				acct.claimed = quota.Vector{}
			}
			acct.claimed.Add(s.req)
			cy.cap.reserve(fit.takes)
			cy.claimStopping(j.Key())
			return fmt.Sprintf("waiting for stopping jobs to free their resources (%s); admitted once they are free", failed.Name), true
		}
	}
	cands := cy.candidates(j, acct, s)
	set := choose(s, cands)
	if set != nil && s.fair != nil && !s.fair.allows(set) {
		set = nil
	}
	if set == nil && failed.Name == "fit" {
		set = cy.tryMove(j, s)
		s.move = set != nil
	}
	if set == nil {
		f := noVictims{version: acct.cohort.version, why: cy.reclaimWait(failed, s), claim: s.claim}
		if f.why != "" {
			f.until = cy.claimUntil(j)
		}
		cy.pre.failed[memoKey] = f
		return f.why, false
	}
	if !s.move {
		s.reserveFree(set)
	}
	return cy.commitPreemption(j, acct, s, set), true
}

// candidates filters the pool to the victims j may preempt: jobs of its
// own tenant in a lower class, and, when j's tenant stays within its
// nominal quota, jobs of cohort tenants above their nominal quota. A job
// never preempts the job that preempted it last, nor a job already
// requeued this cycle; only a reclaim takes a resting job (rest.go).
func (cy *cycle) candidates(j *Job, acct *account, s *trial) []*victim {
	prio := cy.cfg.Classes[cy.className(j)].Priority
	// What the tenant's waiting preemptors claim is taken already: a
	// tenant does not reclaim or take by fair share on top of it (with
	// victims that take long to stop it would every cycle).
	want := s.req
	if len(acct.claimed) > 0 {
		want = s.req.Clone()
		want.Add(acct.claimed)
	}
	reclaim := acct.withinNominal(want)
	s.claim = reclaim
	cy.markClaim(j, reclaim)
	s.fair = nil
	if !reclaim {
		s.fair = cy.newFairPreemption(acct, want, prio)
		if s.fair != nil && cy.starvedHeads[j] {
			s.fair.head = true
		}
	}
	var out []*victim
	for _, v := range cy.pre.byCohort[acct.cohort] {
		if cy.pre.requeued[v.key] || (j.PreemptedBy != "" && preemptedBy(j, v.key)) || !s.relevant(v) {
			continue
		}
		switch {
		case v.acct == acct:
			// A job requeued within reclaimWindow is no victim of its own
			// tenant's higher class either (nor of fairness,
			// fairPreemption.victim): only a reclaim stops a job twice
			// within minutes. Nor is one that just took another
			// tenant's capacity (takerRest).
			if (outranked(v, prio) || cy.passedHead(j, v, prio)) && !cy.resting(v) && !v.took && !requeuedWithin(v.j, cy.s.Now, reclaimWindow) {
				out = append(out, v)
			}
		case reclaim:
			switch {
			case !v.acct.aboveNominal(s.req), cy.pre.planLost[acct.t.Namespace][v.acct.t.Namespace]:
			case cy.reclaimable(v, s):
				out = append(out, v)
			default:
				s.unsaved++
			}
		case s.fair != nil:
			if s.fair.victim(v, s.req) && !cy.resting(v) {
				out = append(out, v)
			}
		}
	}
	if reclaim {
		freshFirst(out)
	}
	return out
}

// reclaimable reports whether a reclaim may take borrower v: one whose
// job saves a checkpoint when stopped (its stop throws nothing away,
// however old its last periodic checkpoint) or that loses at most
// FairLostWork always. With Config.Reclaim ReclaimCheckpointed (the
// governor's default since docs/simulator.md, round 38) no other: the
// nominal quota is then a promise kept when borrowers checkpoint or
// end, not at once; measured on the simulator's grid (round 14), it
// throws away far less work, and the p95 wait of tenants within their
// nominal did not rise; one more row had a tenant below 0.9 of its
// entitlement. With
// ReclaimAny any other, unless Config.ReclaimMaxLoss bounds the device
// time v would throw away: one 8-GPU claim took a 64-GPU job 103 hours
// into a run it never checkpointed, 6,600 GPU-hours (docs/simulator.md,
// round 25). Under either rule a claim that has waited ReclaimMaxWait
// takes any borrower (reclaimWaited).
func (cy *cycle) reclaimable(v *victim, s *trial) bool {
	switch {
	case v.saves, v.lost <= FairLostWork, cy.reclaimWaited(s.j):
		return true
	case cy.cfg.Reclaim == ReclaimCheckpointed:
		return false
	}
	return cy.cfg.ReclaimMaxLoss <= 0 || s.withinLoss(v.cost, cy.cfg.ReclaimMaxLoss)
}

// reclaimWaited reports whether claim j has been one for ReclaimMaxWait
// (claims.go) under a rule that spares borrowers (reclaim =
// "checkpointed", reclaim_max_loss): it then takes any borrower, so a
// tenant that borrows with a job that never checkpoints and never ends
// does not keep another tenant's nominal quota for ever.
func (cy *cycle) reclaimWaited(j *Job) bool {
	spares := cy.cfg.Reclaim == ReclaimCheckpointed || cy.cfg.ReclaimMaxLoss > 0
	return spares && cy.s.Now.Sub(cy.claimSince(j)) >= ReclaimMaxWait
}

// waitingSince is when j last entered the queue: its requeue, if it was
// requeued since it first queued, else its queued-at.
func waitingSince(j *Job) time.Time {
	if j.RequeuedAt.After(j.QueuedAt) {
		return j.RequeuedAt
	}
	return j.QueuedAt
}

// withinLoss reports whether cost, the device time a victim would throw
// away, is at most perDevice for each device instance the trial's job
// asks for. It divides rather than multiplies: a bound near the largest
// duration does not overflow into a negative one that spares everyone.
func (s *trial) withinLoss(cost, perDevice time.Duration) bool {
	return cost/time.Duration(s.devices()) <= perDevice
}

// devices counts the device instances the trial's job asks for: its
// request's device types (requestVector, saturating; models, which hold
// a slash, count the same instances again), at least one.
func (s *trial) devices() int64 {
	var n int64
	for r := range s.devs {
		if !strings.Contains(r, "/") {
			n = satAdd64(n, s.req[r])
		}
	}
	if n < 1 {
		return 1
	}
	return n
}

// reclaimWait is the reason of a job whose reclaim found no victims
// while borrowers' jobs were spared by the reclaim rules (reclaimable):
// its failing check, the rule, and that it waits for them to checkpoint
// or end. "" when none was spared.
func (cy *cycle) reclaimWait(failed *Check, s *trial) string {
	if s.unsaved == 0 {
		return ""
	}
	const waits = "waits for borrowers to checkpoint or end, at most until"
	until := cy.claimUntil(s.j)
	var rule string
	if cy.cfg.Reclaim == ReclaimCheckpointed {
		rule = fmt.Sprintf("reclaim = %q: %s %s (%d of their jobs would lose more than %s of work)",
			ReclaimCheckpointed, waits, until, s.unsaved, FairLostWork)
	} else {
		n := s.devices()
		rule = fmt.Sprintf("reclaim_max_loss = %q: %s %s (%d of their jobs would throw away more than %.0f device-hours, %s for each of the %d devices it claims)",
			cy.cfg.ReclaimMaxLoss, waits, until, s.unsaved, float64(n)*cy.cfg.ReclaimMaxLoss.Hours(), cy.cfg.ReclaimMaxLoss, n)
	}
	return fmt.Sprintf("%s: %s; %s", failed.Name, failed.Text(), rule)
}

// freshFirst orders reclaim candidates: the victims that lose at most
// FairLostWork (a fresh checkpoint) first, of any class, then the rest,
// each group in pool order (lowest class, then least work lost). Reclaim
// is the one preemption that takes victims losing more, for the nominal
// quota's promise, and it still does when the fresh ones do not make
// room. By class alone it took, over and over, a borrower's long
// low-class job that never checkpoints while jobs of a higher class had
// just saved theirs: measured on the simulator's grid (docs/simulator.md,
// round 14), the nine standard contention rows lose 47 % less work, with
// as many preemptions.
func freshFirst(vs []*victim) {
	sort.SliceStable(vs, func(a, b int) bool {
		return vs[a].lost <= FairLostWork && vs[b].lost > FairLostWork
	})
}

// ClassLostWork is the most work (victim.lost, summed over its
// allocations) a job of a tenant's own lower class throws away when a
// job of a higher class of the same tenant takes its place (outranked).
// Measured on the simulator's 18 standard contention weeks
// (docs/simulator.md, round 44): with the 30 minutes the other
// preemptions allow, these own-class preemptions threw away 558 of
// the 1,274 GPU-hours a week lost; with 5 minutes (and FairCrossLoss) a
// week loses about 500 GPU-hours less and nets 0.3 points more useful
// allocation, and a higher-class job waits about 3 minutes longer on
// average.
const ClassLostWork = 5 * time.Minute

// outranked reports whether a job of priority prio may take victim v of
// its own tenant by class: v's class is lower and v loses at most
// ClassLostWork of work. A lower-class job that would lose more (one
// that never checkpointed, hours into its run, or one that saved twenty
// minutes ago) keeps its GPUs, and the higher-class job waits for
// capacity like any other. A job that saves a checkpoint when stopped
// throws nothing away: it is held to FairLostWork, as every preemption
// but a reclaim (the bound covers a save that fails). Measured on the
// simulator's grid (docs/simulator.md, round 13): without a bound a
// tenant's own standard jobs threw away, over and over, the work of its
// long low-class jobs that never checkpoint (one 32-GPU job lost 658
// GPU-hours in 9 restarts); with 30 minutes the nine standard contention
// rows lost 37 % less work, with ClassLostWork (round 44) 40 % less again.
func outranked(v *victim, prio int) bool {
	most := ClassLostWork
	if v.saves {
		most = FairLostWork
	}
	return v.prio < prio && v.lost <= most
}

// passedHead reports whether victim v, of starved head j's own tenant
// and class, went ahead of j in its tenant's queue: v was admitted while
// j waited and was not queued before j (queued after it, or admitted at
// once when submitted). Such jobs, small enough for the quota j's gang
// must borrow beyond, are what keeps a starved head waiting while its
// tenant is below its share; the head takes them back when their work
// is checkpointed (FairLostWork) and they ran FairMinRun, as Slurm's
// backfill never delays the job it reserves for. A requeue keeps the
// victim's queued-at: it stays behind the head. j waited since it last
// entered the queue (waitingSince): a head that was itself requeued keeps
// its queued-at too, and a job admitted while the head still ran passed
// nothing.
func (cy *cycle) passedHead(j *Job, v *victim, prio int) bool {
	return cy.starvedHeads[j] && v.prio == prio && v.j.AdmittedAt.After(waitingSince(j)) &&
		(v.j.QueuedAt.IsZero() || v.j.QueuedAt.After(j.QueuedAt)) &&
		v.lost <= FairLostWork && cy.s.Now.Sub(v.newest) >= cy.cfg.fairMinRun()
}

// preemptedBy reports whether job key ever preempted j (as far as
// allot.preempted-by remembers).
func preemptedBy(j *Job, key string) bool {
	for _, k := range strings.Fields(j.PreemptedBy) {
		if k == key {
			return true
		}
	}
	return false
}

// withinNominal reports whether usage + req stays within the tenant's
// nominal quota in every governed resource req needs.
func (a *account) withinNominal(req quota.Vector) bool {
	for r, n := range req {
		if n > 0 && a.cohort.governed[r] && a.usage[r]+n > a.t.Quota[r] {
			return false
		}
	}
	return true
}

// aboveNominal reports whether the tenant uses more than its nominal
// quota of a governed resource req needs: it borrows what req lacks.
func (a *account) aboveNominal(req quota.Vector) bool {
	for r, n := range req {
		if n > 0 && a.cohort.governed[r] && a.usage[r] > a.t.Quota[r] {
			return true
		}
	}
	return false
}

// claimStopping takes the allocations stopping for preemptor key out of
// what later trials of the cycle count as about to be free: that
// capacity is the preemptor's. Otherwise each cycle until they stopped,
// another job would preempt more on the strength of it.
func (cy *cycle) claimStopping(key string) {
	ps := &cy.pre
	keep := ps.stopping[:0]
	for _, a := range ps.stopping {
		if j := cy.jobByID(a.Namespace, a.JobID); j != nil && lastPreemptor(j) == key {
			if acct := cy.accts[a.Namespace]; acct != nil && a.Live {
				ps.stoppingUse[acct].Sub(allocVector(a))
			}
			continue
		}
		keep = append(keep, a)
	}
	ps.stopping = keep
}

// lastPreemptor is the job that preempted j last ("" when none).
func lastPreemptor(j *Job) string {
	keys := strings.Fields(j.PreemptedBy)
	if len(keys) == 0 {
		return ""
	}
	return keys[len(keys)-1]
}

// commitPreemption records the decisions: victims requeued, their usage
// released, the preemptor's request reserved for it (it stays queued
// until the freed resources show in a snapshot).
func (cy *cycle) commitPreemption(j *Job, acct *account, s *trial, set []*victim) string {
	names := make([]string, 0, len(set))
	p := Preemption{Namespace: j.Namespace, JobID: j.ID, Class: cy.className(j)}
	prio, passed := cy.cfg.Classes[p.Class].Priority, false
	for _, v := range set {
		// Own jobs of a class not below j's are victims only as passed
		// jobs (candidates), or as moved jobs, which keep their place.
		passed = passed || (!s.move && v.acct == acct && v.prio >= prio)
		names = append(names, v.j.Key())
		p.Victims = append(p.Victims, Victim{Namespace: v.j.Namespace, JobID: v.j.ID, Class: v.class, LostWork: v.lost})
	}
	cause := preemptCause(acct, s, set, passed)
	p.Cause = cause
	p.Reason = preemptReason(p.Class, acct, cause, s.req, cy.starvedHeads[j], s.fair, set)
	if passed && cause != CauseQueueOrder {
		p.Reason += fmt.Sprintf("; %s (they lose ≤ %s of work)", passedReason, FairLostWork)
	}
	for _, v := range set {
		why := fmt.Sprintf("preempted by %s (%s): %s; loses %s of work since its last checkpoint%s",
			j.Key(), cause, p.Reason, v.work.Round(time.Second), deviceTime(v))
		if v.j.Dispatched {
			// Nomad cannot hold a dispatched child: it is stopped, not
			// requeued, so borrowed capacity stays reclaimable (#23).
			cy.stopVictim(v.j, why+"; stopped, not requeued (Nomad cannot hold a dispatched job)", cause, j.Key(), v.lost)
		} else {
			cy.requeue(v.j, why, cause, j.Key(), v.lost)
		}
		if v.acct != acct && !s.move {
			cy.noteLost(v.j.Namespace, j.Namespace)
		}
		cy.noteTaken(v.j.Namespace, j.Namespace)
		v.acct.giveBack(v.use)
	}
	acct.use(s.req)
	cy.plan.Preemptions = append(cy.plan.Preemptions, p)
	return fmt.Sprintf("preempting %s (%s); admitted once their resources are free", strings.Join(names, ", "), cause)
}

// preemptCause is the cause of preempting set for a job of tenant acct:
// a move; reclaim or fair share when it takes from other tenants;
// queue order when its own tenant's jobs passed it (passedHead); else
// priority.
func preemptCause(acct *account, s *trial, set []*victim, passed bool) string {
	if s.move {
		return CauseMove
	}
	for _, v := range set {
		if v.acct != acct {
			if s.fair != nil {
				return CauseFairShare
			}
			return CauseReclaim
		}
	}
	if passed {
		return CauseQueueOrder
	}
	return CausePriority
}

// passedReason says why a starved head takes its own tenant's jobs of its
// class (passedHead).
const passedReason = "jobs of its own tenant and class that were queued after it and admitted while it waited give their place back"

func preemptReason(class string, acct *account, cause string, req quota.Vector, head bool, fair *fairPreemption, set []*victim) string {
	starved := fmt.Sprintf("the job is its cohort's starved head (tenant %s uses less than %.2f of its nominal quota and the job waited past the starvation timeout)",
		acct.t.Namespace, HoldShareMax)
	switch {
	case cause == CauseFairShare && head:
		return fmt.Sprintf("%s: it takes back lent capacity from tenants that keep their nominal quota, of any preemptible class (victims lose ≤ %s of work)",
			starved, FairLostWork)
	case cause == CauseQueueOrder:
		return fmt.Sprintf("%s: %s (victims lose ≤ %s of work)", starved, passedReason, FairLostWork)
	}
	switch cause {
	case CausePriority:
		return fmt.Sprintf("class %s of tenant %s outranks the victims' class (%s)", class, acct.t.Namespace, classLoss(set))
	case CauseMove:
		return fmt.Sprintf("moved so the starving head (class %s) of tenant %s fits now instead of waiting for its reserved nodes to drain: every moved job fits the free capacity elsewhere at once and loses ≤ %s of work or saves a checkpoint when stopped",
			class, acct.t.Namespace, FairLostWork)
	case CauseFairShare:
		if fair.byEntitlement(set) {
			return fmt.Sprintf("tenant %s uses less than its fair share of the cohort (%s) and the victims' tenants more than theirs; the preemption brings usage closer to the fair shares (victims lose ≤ %s of work)",
				acct.t.Namespace, fair.ent.text(acct, req), FairLostWork)
		}
		return fmt.Sprintf("tenant %s borrows less than the victims' tenants (weighted share after this job ≥ %.2f below theirs; victims lose ≤ %s of work)",
			acct.t.Namespace, fair.gap, FairLostWork)
	}
	return fmt.Sprintf("tenant %s reclaims its nominal quota (%s) from tenants above theirs", acct.t.Namespace, vectorText(req))
}

// classLoss states the bound a priority preemption held set's victims
// to (outranked; a set with passed jobs has another cause): what they
// lose (ClassLostWork) or, where one saves a checkpoint when stopped
// (and may be FairLostWork past its last periodic one), that it saves.
func classLoss(set []*victim) string {
	for _, v := range set {
		if v.saves {
			return fmt.Sprintf("victims save a checkpoint when stopped or lose ≤ %s of work", ClassLostWork)
		}
	}
	return fmt.Sprintf("victims lose ≤ %s of work", ClassLostWork)
}

func vectorText(v quota.Vector) string {
	var parts []string
	for _, r := range v.Keys() {
		if v[r] > 0 && (strings.Contains(r, "/") || r == "gpu" || r == "npu") {
			parts = append(parts, amountOf(r, v[r]))
		}
	}
	if len(parts) == 0 {
		for _, r := range v.Keys() {
			parts = append(parts, amountOf(r, v[r]))
		}
	}
	return "needs " + strings.Join(parts, ", ")
}
