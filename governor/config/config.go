// Package config holds the governor's one configuration type: defaults,
// then an HCL file, then command-line flags, validated in one place with
// every problem reported at once.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// DefaultListen is the governor's default listen address.
const DefaultListen = "127.0.0.1:4680"

// Config is the whole configuration of allot-governor.
type Config struct {
	// Listen is the address of the proxy, the /allot/v1 API and /metrics.
	Listen string
	// LogLevel is a go-hclog level name.
	LogLevel string
	// DataDir is the governor's data directory (config data_dir, flag
	// -data-dir). When set, the ledger defaults to SQLite at
	// <DataDir>/ledger.db unless the ledger block names a path or dsn.
	DataDir string
	// Nomad says how to reach Nomad with the governor's own token.
	Nomad Nomad
	// Governed lists glob patterns (path.Match) of namespaces the governor
	// may govern; a namespace is governed when it matches one and carries
	// allot.* meta. Default ["*"].
	Governed []string
	// Classes is the priority class table, by name.
	Classes map[string]Class
	// StarvationTimeout is how long a queue head that does not fit may be
	// passed by smaller jobs.
	StarvationTimeout time.Duration
	// MoveMinRun is how long a job must have run before a move may requeue
	// it so that a starving head fits (engine.Config.MoveMinRun).
	MoveMinRun time.Duration
	// FairMinRun is how long a job must have run before a fairness
	// preemption may requeue it (engine.Config.FairMinRun).
	FairMinRun time.Duration
	// FairShareGap is how far above the preemptor's tenant's weighted
	// share a fairness victim's tenant's share must stay
	// (engine.Config.FairShareGap).
	FairShareGap float64
	// FairShareClasses is which classes a fairness preemption may take:
	// FairClassesNotAbove (default) or FairClassesAny
	// (engine.Config.FairClasses).
	FairShareClasses string
	// FairShareRule is the rule a fairness preemption between borrowers
	// follows: FairRuleAuto (default: the entitlement rule, of any
	// class, for victims that save a checkpoint when stopped or lose at
	// most engine.FairCheapLoss, the gap rule for the others),
	// FairRuleGap or FairRuleEntitlement
	// (engine.Config.FairShareRule).
	FairShareRule string
	// QueueOrder orders the queue across tenants: QueueOrderClass
	// (default; class priority, then the tenants' shares) or
	// QueueOrderShare (the tenants' shares, then class within a tenant;
	// engine.Config.QueueOrder).
	QueueOrder string
	// RequeueRest is how long a job requeued by preemption rests once
	// admitted again, doubling per requeue up to an hour, before any
	// preemption but another tenant's reclaim may take it
	// (engine.Config.RequeueRest); zero: no rest.
	RequeueRest time.Duration
	// GangTimeout bounds how long an admitted job may wait for all its
	// allocations to start before it is held and requeued.
	GangTimeout time.Duration
	// BackoffBase and BackoffCap bound how long a requeued (preempted or
	// timed-out) job waits before it may be admitted again:
	// base·2^(requeues-1), at most cap.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// DisablePreemption turns reclaim and within-tenant preemption off.
	DisablePreemption bool
	// SystemJobs says what happens to system and sysbatch jobs in governed
	// namespaces: SystemJobsRefuse (default) holds them with a reason and
	// the proxy refuses them; SystemJobsGovern admits them like any job,
	// counted per eligible node.
	SystemJobs string
	// Placement is how admitted jobs are placed: PlacementPack (default)
	// pins each fresh admission to the nodes the engine's fit packed it
	// onto (docs/governor.md, "Placement"); PlacementNomad leaves
	// placement to Nomad's scheduler.
	Placement string
	// Reclaim is which borrowers a reclaim may take:
	// ReclaimCheckpointed (default) only those that save a checkpoint
	// when stopped or lose at most 30 minutes of work, until the job
	// has been a claim for engine.ReclaimMaxWait; ReclaimAny any, those with fresh
	// checkpoints first (the default when ReclaimMaxLoss alone is set in
	// the file: the bound is ReclaimAny's) (engine.Config.Reclaim;
	// docs/governor.md, "Reclaim").
	Reclaim string
	// ReclaimMaxLoss bounds the device time one borrower's stop may throw
	// away in a reclaim, per device instance the claim asks for; zero:
	// no bound (engine.Config.ReclaimMaxLoss; docs/governor.md,
	// "Reclaim").
	ReclaimMaxLoss time.Duration
	// CycleInterval is the period of the reconcile cycle when no event
	// triggers one earlier.
	CycleInterval time.Duration
	// ResyncBackoffMax caps the back-off between full resyncs after errors.
	ResyncBackoffMax time.Duration
	// EnableDebug serves Go's profiler on /debug/pprof/.
	EnableDebug bool
	// TLS is the listener's TLS (HTTPS, optional client certificates).
	TLS TLS
	// HTTP holds the server's timeouts.
	HTTP HTTP
	// Limits bound request bodies and concurrent admissions.
	Limits Limits
	// Auth configures caller authentication and the metrics scrape token.
	Auth Auth
	// Admission configures the admission seal's key (admission.go).
	Admission Admission
	// Ledger configures the usage, cost and audit ledger (ledger.go).
	Ledger Ledger
	// Idle configures idle and zombie reclamation (idle.go).
	Idle Idle
	// SubmitterTokens says whether jobs need their submitter's Vault or
	// Consul token on this cluster (tokens.go): SubmitterTokensAuto
	// (default), SubmitterTokensRequired or SubmitterTokensNone.
	SubmitterTokens string
	// HA configures leader election among several governors (ha.go);
	// disabled without an ha block.
	HA HA
}

// Nomad is how the governor reaches Nomad.
type Nomad struct {
	Address       string
	Token         string
	CACert        string
	ClientCert    string
	ClientKey     string
	TLSServerName string
	TLSSkipVerify bool
	// VerifyHTTPSClient says whether Nomad requires client certificates
	// (its tls.verify_https_client); nil means "when ClientCert is set".
	VerifyHTTPSClient *bool
}

// Values of Config.SystemJobs.
const (
	SystemJobsRefuse = "refuse"
	SystemJobsGovern = "govern"
)

// Values of Config.FairShareClasses (engine.FairClassesNotAbove,
// engine.FairClassesAny).
const (
	FairClassesNotAbove = engine.FairClassesNotAbove
	FairClassesAny      = engine.FairClassesAny
)

// Values of Config.FairShareRule (engine.FairRuleAuto,
// engine.FairRuleGap, engine.FairRuleEntitlement).
const (
	FairRuleAuto        = engine.FairRuleAuto
	FairRuleGap         = engine.FairRuleGap
	FairRuleEntitlement = engine.FairRuleEntitlement
)

// Values of Config.QueueOrder (engine.QueueOrderClass,
// engine.QueueOrderShare).
const (
	QueueOrderClass = engine.QueueOrderClass
	QueueOrderShare = engine.QueueOrderShare
)

// mode is one value of a setting of a few named values, with what it
// means.
type mode struct{ value, means string }

// checkMode returns the error of a setting whose value is none of
// modes', naming each with what it means; nil when it is one of them.
func checkMode(setting, value string, modes ...mode) error {
	names := make([]string, len(modes))
	for i, m := range modes {
		if value == m.value {
			return nil
		}
		names[i] = fmt.Sprintf("%q (%s)", m.value, m.means)
	}
	last := len(names) - 1
	if last == 0 {
		return fmt.Errorf("%s %q: must be %s", setting, value, names[0])
	}
	return fmt.Errorf("%s %q: must be %s or %s", setting, value, strings.Join(names[:last], ", "), names[last])
}

// Values of Config.Reclaim (engine.ReclaimAny, engine.ReclaimCheckpointed).
const (
	ReclaimAny          = engine.ReclaimAny
	ReclaimCheckpointed = engine.ReclaimCheckpointed
)

// Values of Config.Placement (engine.PlacementPack, engine.PlacementNomad).
const (
	PlacementPack  = "pack"
	PlacementNomad = "nomad"
)

// Class is one priority class.
type Class struct {
	// Priority is the Nomad job priority the governor sets (1..100).
	Priority int
	// Preemptible tells whether jobs of the class may be preempted.
	Preemptible bool
	// Restricted classes are only for tenants whose allot.classes names them.
	Restricted bool
}

// Default returns the configuration with every default from ARCHITECTURE.md.
func Default() Config {
	return Config{
		Listen:   DefaultListen,
		LogLevel: "info",
		Nomad:    Nomad{Address: "http://127.0.0.1:4646"},
		Governed: []string{"*"},
		Classes: map[string]Class{
			"production":  {Priority: 90, Preemptible: false, Restricted: true},
			"high":        {Priority: 70, Preemptible: true},
			"standard":    {Priority: 50, Preemptible: true},
			"low":         {Priority: 30, Preemptible: true},
			"best-effort": {Priority: 10, Preemptible: true},
		},
		StarvationTimeout: 10 * time.Minute,
		MoveMinRun:        engine.MoveMinRun,
		FairMinRun:        engine.FairMinRun,
		FairShareGap:      engine.FairShareGap,
		FairShareClasses:  FairClassesNotAbove,
		FairShareRule:     FairRuleAuto,
		QueueOrder:        QueueOrderClass,
		GangTimeout:       10 * time.Minute,
		BackoffBase:       30 * time.Second,
		BackoffCap:        10 * time.Minute,
		SystemJobs:        SystemJobsRefuse,
		Placement:         PlacementPack,
		Reclaim:           ReclaimCheckpointed,
		CycleInterval:     5 * time.Second,
		ResyncBackoffMax:  30 * time.Second,
		HTTP:              defaultHTTP(),
		Limits:            defaultLimits(),
		Auth:              defaultAuth(),
		Ledger:            defaultLedger(),
		Idle:              defaultIdle(),
		SubmitterTokens:   SubmitterTokensAuto,
		HA:                defaultHA(),
	}
}

// ClassNames returns the class names in a stable order.
func (c *Config) ClassNames() []string {
	names := make([]string, 0, len(c.Classes))
	for n := range c.Classes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// GovernsNamespace reports whether ns matches one of the Governed patterns.
func (c *Config) GovernsNamespace(ns string) bool {
	for _, p := range c.Governed {
		if ok, _ := path.Match(p, ns); ok {
			return true
		}
	}
	return false
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: %w", c.Listen, err))
	}
	u, err := url.Parse(c.Nomad.Address)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("nomad address %q: must be an http(s) URL", c.Nomad.Address))
	case u.Host == c.Listen:
		errs = append(errs, fmt.Errorf("nomad address %q is the governor's own listen address (is NOMAD_ADDR pointing at the governor? use -nomad-addr)", c.Nomad.Address))
	}
	for _, p := range c.Governed {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("governed_namespaces pattern %q: %w", p, err))
		}
	}
	errs = append(errs, c.validateClasses()...)
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateLedger()...)
	errs = append(errs, c.validateIdle()...)
	errs = append(errs, c.validateTokens()...)
	errs = append(errs, c.validateHA()...)
	for name, d := range map[string]time.Duration{
		"starvation_timeout": c.StarvationTimeout, "gang_timeout": c.GangTimeout, "move_min_run": c.MoveMinRun,
		"fair_min_run":   c.FairMinRun,
		"cycle_interval": c.CycleInterval, "resync_backoff_max": c.ResyncBackoffMax,
		"backoff_base": c.BackoffBase, "backoff_cap": c.BackoffCap,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	if c.ReclaimMaxLoss < 0 {
		errs = append(errs, fmt.Errorf("reclaim_max_loss must be 0 (no bound) or positive, got %s", c.ReclaimMaxLoss))
	}
	if c.ReclaimMaxLoss > 0 && c.Reclaim == ReclaimCheckpointed {
		errs = append(errs, fmt.Errorf("reclaim_max_loss %s: bounds reclaim = %q only; reclaim = %q already takes no borrower that loses more than 30 minutes of work",
			c.ReclaimMaxLoss, ReclaimAny, ReclaimCheckpointed))
	}
	if c.RequeueRest < 0 || c.RequeueRest > engine.RequeueRestMax {
		errs = append(errs, fmt.Errorf("requeue_rest must be between 0 (no rest) and %s, got %s", engine.RequeueRestMax, c.RequeueRest))
	}
	if c.SystemJobs != SystemJobsRefuse && c.SystemJobs != SystemJobsGovern {
		errs = append(errs, fmt.Errorf("system_jobs %q: must be %q or %q", c.SystemJobs, SystemJobsRefuse, SystemJobsGovern))
	}
	if !(c.FairShareGap > 0 && c.FairShareGap <= 1) {
		errs = append(errs, fmt.Errorf("fair_share_gap must be above 0 and at most 1 (weighted shares: usage ÷ nominal quota), got %g", c.FairShareGap))
	}
	for _, err := range []error{
		checkMode("placement", c.Placement, mode{PlacementPack, "pin admissions to the nodes the governor packed them onto"},
			mode{PlacementNomad, "leave placement to Nomad"}),
		checkMode("reclaim", c.Reclaim, mode{ReclaimAny, "a tenant below its nominal quota takes it back at once, from borrowers with fresh checkpoints first"},
			mode{ReclaimCheckpointed, "only from borrowers that save on stop or lose at most 30 minutes of work, any once the job has been a claim for 72h"}),
		checkMode("fair_share_classes", c.FairShareClasses, mode{FairClassesNotAbove, "a fair-share preemption takes jobs of a class no higher than the preemptor's"},
			mode{FairClassesAny, "of any preemptible class"}),
		checkMode("fair_share_rule", c.FairShareRule, mode{FairRuleAuto, "the entitlement rule, of any preemptible class, for victims that save a checkpoint when stopped (ckpt driver) or would lose at most 5 minutes of work (then only within both tenants' fair shares); the gap rule and fair_share_classes for the others"},
			mode{FairRuleGap, "a fair-share victim's tenant keeps a weighted share fair_share_gap above the preemptor's"},
			mode{FairRuleEntitlement, "capacity moves from tenants above their fair share of the cohort to one below its own when that brings usage closer to the fair shares"}),
		checkMode("queue_order", c.QueueOrder, mode{QueueOrderClass, "class priority first, then the tenants' weighted shares"},
			mode{QueueOrderShare, "the tenant with the lowest weighted share first, each tenant's jobs by class"}),
	} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.BackoffCap < c.BackoffBase {
		errs = append(errs, fmt.Errorf("backoff_cap %s must not be below backoff_base %s", c.BackoffCap, c.BackoffBase))
	}
	sortErrs(errs)
	return errors.Join(errs...)
}

func (c *Config) validateClasses() []error {
	var errs []error
	if _, ok := c.Classes["standard"]; !ok {
		errs = append(errs, errors.New(`class "standard" must exist: it is the default class`))
	}
	for name, cl := range c.Classes {
		if err := classNameError(name); err != nil {
			errs = append(errs, err)
		}
		if cl.Priority < 1 || cl.Priority > 100 {
			errs = append(errs, fmt.Errorf("class %s: priority %d is outside 1..100", jobmeta.Quote(name), cl.Priority))
		}
	}
	return errs
}

// classNameError says why no job or tenant could ever name class name, or
// nil. A job's allot.class reaches the engine cut to jobmeta.MaxShown
// characters and always as UTF-8 (Nomad decodes jobs from JSON), and an
// empty allot.class means the tenant's default class; a tenant's
// allot.classes is a comma list of trimmed names and its
// allot.default-class is trimmed (governor/quota). A class that none of
// them can name is a trap, refused here.
func classNameError(name string) error {
	q := jobmeta.Quote(name)
	switch {
	case name == "":
		return errors.New(`class "": an empty name is no class (a job without allot.class runs at its tenant's default class)`)
	case !utf8.ValidString(name):
		return fmt.Errorf("class %s: the name is not UTF-8, and a job's allot.class always is", q)
	case jobmeta.Shown(name) != name:
		return fmt.Errorf("class %s: the name is longer than %d characters; a job's allot.class is read cut to %d, so no job could name it",
			q, jobmeta.MaxShown, jobmeta.MaxShown)
	case strings.Contains(name, ","):
		return fmt.Errorf("class %s: the name contains a comma, so a tenant's allot.classes (a comma list) could never name it", q)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("class %s: the name starts or ends with white space, which a tenant's allot.classes and allot.default-class drop", q)
	}
	return nil
}

func sortErrs(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}
