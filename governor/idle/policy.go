package idle

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/quota"
)

// Action is what the ladder does at the end of the grace.
type Action string

// Actions a policy may name (allot.idle.action).
const (
	// ActionWarn only warns; nothing is stopped.
	ActionWarn Action = "warn"
	// ActionCheckpoint stops the job through the ckpt driver (which saves a
	// checkpoint on stop) and requeues it, so it resumes from the checkpoint.
	ActionCheckpoint Action = "checkpoint"
	// ActionStop stops and requeues the job without expecting a checkpoint.
	ActionStop Action = "stop"
)

// Namespace meta keys of the idle policy. Namespace meta is writable only
// with a management token in Nomad 1.6.1, so a tenant cannot change its own
// policy or exempt itself: every key is an operator's decision.
const (
	KeyWindow    = "allot.idle.window"
	KeyThreshold = "allot.idle.threshold"
	KeyMemory    = "allot.idle.memory"
	KeyGrace     = "allot.idle.grace"
	KeyNotice    = "allot.idle.notice"
	KeyAction    = "allot.idle.action"
	KeyTTL       = "allot.idle.ttl"
	// KeyExemptPrefix + job ID = "until=<RFC3339>;reason=<text>"
	// (allotapi holds the rule that writes it).
	KeyExemptPrefix = allotapi.ExemptKeyPrefix
)

// Policy is the idle policy of one tenant.
type Policy struct {
	// Window is how long an allocation must be idle, with no gap in its
	// telemetry, before it is warned.
	Window time.Duration
	// ThresholdPct: a sample at or below it is idle (percent, 0..100).
	ThresholdPct float64
	// MemoryMiB: an idle sample holding at least this much device memory is
	// idle-held, below it truly idle.
	MemoryMiB int64
	// Grace runs from the end of the window (the allocation becomes a
	// suspect) to the action. Busy again inside it, or a gap in its
	// telemetry before the warning, starts the observation over.
	Grace time.Duration
	// Notice is how long before the end of the grace the owner is warned
	// (at once when it is not shorter than the grace). A warned
	// allocation busy again has its warning withdrawn.
	Notice time.Duration
	// Action is done at the end of the grace.
	Action Action
	// UnclaimedTTL: a service job running this long after its owner last
	// submitted it is unclaimed (0: off).
	UnclaimedTTL time.Duration
}

// DefaultPolicy is the operator default used when the config sets none.
func DefaultPolicy() Policy {
	return Policy{Window: 2 * time.Hour, ThresholdPct: 5, MemoryMiB: 1024, Grace: 30 * time.Minute, Notice: 15 * time.Minute,
		Action: ActionCheckpoint}
}

// Validate reports every problem of a policy at once.
func (p Policy) Validate() error {
	var errs []error
	if p.Window <= 0 {
		errs = append(errs, fmt.Errorf("window %s must be positive", p.Window))
	}
	if p.UnclaimedTTL < 0 {
		errs = append(errs, fmt.Errorf("unclaimed TTL %s must not be negative", p.UnclaimedTTL))
	}
	if p.Grace < 0 {
		errs = append(errs, fmt.Errorf("grace %s must not be negative", p.Grace))
	}
	if p.Notice <= 0 {
		errs = append(errs, fmt.Errorf("notice %s must be positive", p.Notice))
	}
	if p.ThresholdPct < 0 || p.ThresholdPct > 100 {
		errs = append(errs, fmt.Errorf("threshold %v must be within 0..100", p.ThresholdPct))
	}
	if p.MemoryMiB < 0 {
		errs = append(errs, fmt.Errorf("memory %d MiB must not be negative", p.MemoryMiB))
	}
	if _, err := parseAction(string(p.Action)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Exemption keeps one job out of the ladder until it expires.
type Exemption struct {
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

// Active reports whether the exemption holds at now.
func (e *Exemption) Active(now time.Time) bool { return e != nil && now.Before(e.Until) }

// Tenant is a namespace's parsed idle policy and exemptions.
type Tenant struct {
	Namespace string
	Policy    Policy
	// Exempt maps job ID → exemption.
	Exempt map[string]Exemption
	// Problems are the meta values that were refused (the default was kept
	// for each), reported rather than fatal.
	Problems []string
}

// ParseTenant reads a namespace's allot.idle.* meta over the operator
// default. A bad value is reported in Problems and the default is kept: bad
// input never loses the rest of the policy.
func ParseTenant(ns string, meta map[string]string, def Policy) Tenant {
	t := Tenant{Namespace: ns, Policy: def, Exempt: map[string]Exemption{}}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := t.apply(k, strings.TrimSpace(meta[k])); err != nil {
			t.Problems = append(t.Problems, fmt.Sprintf("%s=%q: %v", k, meta[k], err))
		}
	}
	return t
}

func (t *Tenant) apply(key, val string) error {
	p := &t.Policy
	switch {
	case key == KeyWindow:
		return set(&p.Window, val, positiveDuration)
	case key == KeyGrace:
		return set(&p.Grace, val, nonNegativeDuration)
	case key == KeyNotice:
		return set(&p.Notice, val, positiveDuration)
	case key == KeyTTL:
		return set(&p.UnclaimedTTL, val, nonNegativeDuration)
	case key == KeyThreshold:
		return set(&p.ThresholdPct, val, percent)
	case key == KeyMemory:
		return set(&p.MemoryMiB, val, mebibytes)
	case key == KeyAction:
		return set(&p.Action, val, parseAction)
	case strings.HasPrefix(key, KeyExemptPrefix):
		e, err := ParseExemption(val)
		if err == nil {
			t.Exempt[strings.TrimPrefix(key, KeyExemptPrefix)] = e
		}
		return err
	case strings.HasPrefix(key, quota.PrefixIdle): // a typo would otherwise keep the default unseen
		return errors.New("unknown idle policy key (known: allot.idle.window, threshold, memory, grace, notice, action, ttl, exempt.<job>)")
	}
	return nil // not an idle key
}

// set parses val into *dst, leaving *dst as it was when val is refused.
func set[T any](dst *T, val string, parse func(string) (T, error)) error {
	v, err := parse(val)
	if err == nil {
		*dst = v
	}
	return err
}

func positiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration: %w", err)
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}

func nonNegativeDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration: %w", err)
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

func percent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || v > 100 || v != v {
		return 0, errors.New("want a percentage within 0..100")
	}
	return v, nil
}

func mebibytes(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSuffix(strings.ToLower(s), "mib"), 10, 64)
	if err != nil || v < 0 {
		return 0, errors.New("want a non-negative number of MiB")
	}
	return v, nil
}

func parseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case ActionWarn, ActionCheckpoint, ActionStop:
		return a, nil
	}
	return "", fmt.Errorf("action %q: want warn, checkpoint or stop", s)
}

// ParseExemption reads "until=<RFC3339>;reason=<text>"; both are required.
func ParseExemption(s string) (Exemption, error) {
	var e Exemption
	for _, part := range strings.Split(s, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch strings.TrimSpace(k) {
		case "until":
			u, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
			if err != nil {
				return Exemption{}, fmt.Errorf("exemption until: %w", err)
			}
			e.Until = u
		case "reason":
			e.Reason = strings.TrimSpace(v)
		}
	}
	if e.Until.IsZero() || e.Reason == "" {
		return Exemption{}, errors.New("an exemption needs until=<RFC3339> and reason=<text>")
	}
	return e, nil
}

// Format writes an exemption as its meta value.
func (e Exemption) Format() string {
	return allotapi.IdleExemption(e).MetaValue()
}
