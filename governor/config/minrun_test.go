package config

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

// TestMinRuns: move_min_run and fair_min_run reach the engine (10m and
// 2m by default, as engine.MoveMinRun and engine.FairMinRun) and must be
// positive durations.
func TestMinRuns(t *testing.T) {
	type minRuns struct{ move, fair time.Duration }
	cases := map[string]struct {
		file    string
		want    minRuns
		wantErr string
	}{
		"defaults":                {file: ``, want: minRuns{10 * time.Minute, 2 * time.Minute}},
		"move in seconds":         {file: `move_min_run = "5s"`, want: minRuns{5 * time.Second, 2 * time.Minute}},
		"move in hours":           {file: `move_min_run = "2h"`, want: minRuns{2 * time.Hour, 2 * time.Minute}},
		"fair in seconds":         {file: `fair_min_run = "3s"`, want: minRuns{10 * time.Minute, 3 * time.Second}},
		"both":                    {file: "move_min_run = \"1m\"\nfair_min_run = \"30m\"", want: minRuns{time.Minute, 30 * time.Minute}},
		"zero is refused":         {file: `move_min_run = "0s"`, wantErr: "move_min_run must be positive, got 0s"},
		"negative is refused":     {file: `move_min_run = "-1m"`, wantErr: "move_min_run must be positive, got -1m0s"},
		"fair zero is refused":    {file: `fair_min_run = "0s"`, wantErr: "fair_min_run must be positive, got 0s"},
		"not a duration":          {file: `move_min_run = "soon"`, wantErr: `move_min_run: time: invalid duration "soon"`},
		"fair not a duration":     {file: `fair_min_run = "later"`, wantErr: `fair_min_run: time: invalid duration "later"`},
		"a number is no duration": {file: `fair_min_run = 600`, wantErr: `fair_min_run: time: missing unit in duration "600"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := loadFile(t, tc.file, tc.wantErr)
			if c == nil {
				return
			}
			must.Eq(t, tc.want, minRuns{c.MoveMinRun, c.FairMinRun})
			ec := c.Engine()
			must.Eq(t, tc.want, minRuns{ec.MoveMinRun, ec.FairMinRun}, must.Sprint("the engine decides with them"))
		})
	}
}

// TestRequeueRest: requeue_rest reaches the engine, is off (0) by
// default, and must lie in [0, engine.RequeueRestMax].
func TestRequeueRest(t *testing.T) {
	checkSetting(t, map[string]settingCase[time.Duration]{
		"off by default":      {file: ``, want: 0},
		"two minutes":         {file: `requeue_rest = "2m"`, want: 2 * time.Minute},
		"zero turns it off":   {file: `requeue_rest = "0s"`, want: 0},
		"the most, an hour":   {file: `requeue_rest = "1h"`, want: time.Hour},
		"longer is refused":   {file: `requeue_rest = "61m"`, wantErr: "requeue_rest must be between 0 (no rest) and 1h0m0s, got 1h1m0s"},
		"negative is refused": {file: `requeue_rest = "-1m"`, wantErr: "requeue_rest must be between 0 (no rest) and 1h0m0s, got -1m0s"},
		"not a duration":      {file: `requeue_rest = "a while"`, wantErr: `requeue_rest: time: invalid duration "a while"`},
	}, func(c Config) time.Duration { return c.RequeueRest }, func(ec engine.Config) time.Duration { return ec.RequeueRest })
}

// TestReclaim: reclaim reaches the engine, is "checkpointed" by default
// (or "any" when a reclaim_max_loss bound alone is set: the bound is
// "any"'s), and is one of the two modes; anything else is refused with
// both named.
func TestReclaim(t *testing.T) {
	checkSetting(t, map[string]settingCase[string]{
		"checkpointed by default":     {file: ``, want: engine.ReclaimCheckpointed},
		"any":                         {file: `reclaim = "any"`, want: engine.ReclaimAny},
		"checkpointed":                {file: `reclaim = "checkpointed"`, want: engine.ReclaimCheckpointed},
		"a bound alone means any":     {file: `reclaim_max_loss = "24h"`, want: engine.ReclaimAny},
		"no bound alone, the default": {file: `reclaim_max_loss = "0s"`, want: engine.ReclaimCheckpointed},
		"another value":               {file: `reclaim = "never"`, wantErr: `reclaim "never": must be "any" (`},
		"letter case counts":          {file: `reclaim = "Checkpointed"`, wantErr: `or "checkpointed" (only from borrowers`},
		"not a string":                {file: `reclaim = true`, wantErr: `reclaim "true"`},
	}, func(c Config) string { return c.Reclaim }, func(ec engine.Config) string { return ec.Reclaim })
}

// TestReclaimMaxLoss: reclaim_max_loss reaches the engine, bounds nothing
// (0) by default, must not be negative, and bounds reclaim = "any" only.
func TestReclaimMaxLoss(t *testing.T) {
	checkSetting(t, map[string]settingCase[time.Duration]{
		"no bound by default":         {file: ``, want: 0},
		"a day":                       {file: `reclaim_max_loss = "24h"`, want: 24 * time.Hour},
		"a day with any":              {file: "reclaim = \"any\"\nreclaim_max_loss = \"24h\"", want: 24 * time.Hour},
		"zero bounds nothing":         {file: `reclaim_max_loss = "0s"`, want: 0},
		"negative is refused":         {file: `reclaim_max_loss = "-1h"`, wantErr: "reclaim_max_loss must be 0 (no bound) or positive, got -1h0m0s"},
		"not a duration":              {file: `reclaim_max_loss = "a day"`, wantErr: `reclaim_max_loss: time: invalid duration "a day"`},
		"not with checkpointed":       {file: "reclaim = \"checkpointed\"\nreclaim_max_loss = \"24h\"", wantErr: `reclaim_max_loss 24h0m0s: bounds reclaim = "any" only`},
		"with checkpointed, no bound": {file: "reclaim = \"checkpointed\"\nreclaim_max_loss = \"0s\"", want: 0},
	}, func(c Config) time.Duration { return c.ReclaimMaxLoss }, func(ec engine.Config) time.Duration { return ec.ReclaimMaxLoss })
}

// TestFairShareSettings: fair_share_gap and fair_share_classes reach the
// engine (0.1 and "not-above" by default); a gap outside (0, 1] and any
// other class mode are refused with what is allowed.
func TestFairShareSettings(t *testing.T) {
	type fair struct {
		gap     float64
		classes string
		rule    string
	}
	cases := map[string]struct {
		file    string
		want    fair
		wantErr string
	}{
		"defaults":              {file: ``, want: fair{0.1, engine.FairClassesNotAbove, engine.FairRuleAuto}},
		"a smaller gap":         {file: `fair_share_gap = 0.02`, want: fair{0.02, engine.FairClassesNotAbove, engine.FairRuleAuto}},
		"any class":             {file: `fair_share_classes = "any"`, want: fair{0.1, engine.FairClassesAny, engine.FairRuleAuto}},
		"both (round 20)":       {file: "fair_share_gap = 0.02\nfair_share_classes = \"any\"", want: fair{0.02, engine.FairClassesAny, engine.FairRuleAuto}},
		"not-above spelled out": {file: `fair_share_classes = "not-above"`, want: fair{0.1, engine.FairClassesNotAbove, engine.FairRuleAuto}},
		"a gap of 1":            {file: `fair_share_gap = 1`, want: fair{1, engine.FairClassesNotAbove, engine.FairRuleAuto}},
		"the entitlement rule":  {file: `fair_share_rule = "entitlement"`, want: fair{0.1, engine.FairClassesNotAbove, engine.FairRuleEntitlement}},
		"entitlement, any class (round 21)": {file: "fair_share_rule = \"entitlement\"\nfair_share_classes = \"any\"",
			want: fair{0.1, engine.FairClassesAny, engine.FairRuleEntitlement}},
		"gap rule spelled out":    {file: `fair_share_rule = "gap"`, want: fair{0.1, engine.FairClassesNotAbove, engine.FairRuleGap}},
		"auto spelled out":        {file: `fair_share_rule = "auto"`, want: fair{0.1, engine.FairClassesNotAbove, engine.FairRuleAuto}},
		"another rule":            {file: `fair_share_rule = "drf"`, wantErr: `fair_share_rule "drf": must be "auto" (the entitlement rule, of any preemptible class, for victims that save a checkpoint when stopped (ckpt driver) or would lose at most 5 minutes of work (then only within both tenants' fair shares); the gap rule and fair_share_classes for the others), "gap" (`},
		"an empty rule":           {file: `fair_share_rule = ""`, wantErr: `fair_share_rule "": must be "auto"`},
		"a number is no rule":     {file: `fair_share_rule = 1.5`, wantErr: `or "entitlement" (capacity moves from tenants above their fair share`},
		"zero gap is refused":     {file: `fair_share_gap = 0`, wantErr: "fair_share_gap must be above 0 and at most 1 (weighted shares: usage ÷ nominal quota), got 0"},
		"negative gap is refused": {file: `fair_share_gap = -0.1`, wantErr: "fair_share_gap must be above 0 and at most 1"},
		"a gap above 1":           {file: `fair_share_gap = 1.5`, wantErr: "got 1.5"},
		"a gap in words":          {file: `fair_share_gap = "small"`, wantErr: "governor.hcl:1,19: fair_share_gap: Unsuitable value type; Unsuitable value: a number is required"},
		"another class mode":      {file: `fair_share_classes = "all"`, wantErr: `fair_share_classes "all": must be "not-above" (`},
		"letter case counts":      {file: `fair_share_classes = "Any"`, wantErr: `or "any" (of any preemptible class)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := loadFile(t, tc.file, tc.wantErr)
			if c == nil {
				return
			}
			must.Eq(t, tc.want, fair{c.FairShareGap, c.FairShareClasses, c.FairShareRule})
			ec := c.Engine()
			must.Eq(t, tc.want, fair{ec.FairShareGap, ec.FairClasses, ec.FairShareRule}, must.Sprint("the engine decides with them"))
		})
	}
}

// TestQueueOrderSetting: queue_order reaches the engine ("class" by
// default); any other value is refused with what is allowed.
func TestQueueOrderSetting(t *testing.T) {
	checkSetting(t, map[string]settingCase[string]{
		"default":             {file: ``, want: engine.QueueOrderClass},
		"share":               {file: `queue_order = "share"`, want: engine.QueueOrderShare},
		"class spelled out":   {file: `queue_order = "class"`, want: engine.QueueOrderClass},
		"another order":       {file: `queue_order = "fifo"`, wantErr: `queue_order "fifo": must be "class" (class priority first, then the tenants' weighted shares) or "share" (`},
		"empty":               {file: `queue_order = ""`, wantErr: `queue_order "": must be "class"`},
		"letter case counts":  {file: `queue_order = "Share"`, wantErr: `queue_order "Share"`},
		"a number is refused": {file: `queue_order = 2`, wantErr: `queue_order "2": must be`},
	}, func(c Config) string { return c.QueueOrder }, func(ec engine.Config) string { return ec.QueueOrder })
}
