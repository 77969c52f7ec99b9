package config

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2/hclsimple"

	"github.com/allot-sh/allot/governor/engine"
)

// fileConfig is the HCL shape of the config file. Every field is optional;
// unset fields keep their defaults.
type fileConfig struct {
	Listen            *string      `hcl:"listen"`
	LogLevel          *string      `hcl:"log_level"`
	DataDir           *string      `hcl:"data_dir"`
	Governed          []string     `hcl:"governed_namespaces,optional"`
	StarvationTimeout *string      `hcl:"starvation_timeout"`
	MoveMinRun        *string      `hcl:"move_min_run"`
	FairMinRun        *string      `hcl:"fair_min_run"`
	FairShareGap      *float64     `hcl:"fair_share_gap"`
	FairShareClasses  *string      `hcl:"fair_share_classes"`
	FairShareRule     *string      `hcl:"fair_share_rule"`
	QueueOrder        *string      `hcl:"queue_order"`
	RequeueRest       *string      `hcl:"requeue_rest"`
	GangTimeout       *string      `hcl:"gang_timeout"`
	CycleInterval     *string      `hcl:"cycle_interval"`
	ResyncBackoffMax  *string      `hcl:"resync_backoff_max"`
	BackoffBase       *string      `hcl:"backoff_base"`
	BackoffCap        *string      `hcl:"backoff_cap"`
	DisablePreemption *bool        `hcl:"disable_preemption"`
	SystemJobs        *string      `hcl:"system_jobs"`
	Placement         *string      `hcl:"placement"`
	Reclaim           *string      `hcl:"reclaim"`
	ReclaimMaxLoss    *string      `hcl:"reclaim_max_loss"`
	EnableDebug       *bool        `hcl:"enable_debug"`
	Nomad             *fileNomad   `hcl:"nomad,block"`
	Classes           []*fileClass `hcl:"class,block"`
	TLS               *fileTLS     `hcl:"tls,block"`
	HTTP              *fileHTTP    `hcl:"http,block"`
	Limits            *fileLimits  `hcl:"limits,block"`
	Auth              *fileAuth    `hcl:"auth,block"`
	AdmissionKeyFile  *string      `hcl:"admission_key_file"`
	AdmissionKeyNS    *string      `hcl:"admission_key_namespace"`
	Ledger            *fileLedger  `hcl:"ledger,block"`
	Idle              *fileIdle    `hcl:"idle,block"`
	SubmitterTokens   *string      `hcl:"submitter_tokens"`
	HA                *fileHA      `hcl:"ha,block"`
}

type fileNomad struct {
	Address       *string `hcl:"address"`
	Token         *string `hcl:"token"`
	CACert        *string `hcl:"ca_cert"`
	ClientCert    *string `hcl:"client_cert"`
	ClientKey     *string `hcl:"client_key"`
	TLSServerName *string `hcl:"tls_server_name"`
	TLSSkipVerify *bool   `hcl:"tls_skip_verify"`
	// VerifyHTTPSClient mirrors Nomad's tls.verify_https_client.
	VerifyHTTPSClient *bool `hcl:"verify_https_client"`
}

type fileClass struct {
	Name        string `hcl:"name,label"`
	Priority    int    `hcl:"priority"`
	Preemptible *bool  `hcl:"preemptible"`
	Restricted  *bool  `hcl:"restricted"`
}

// LoadFile applies the HCL file at path over c. A class block replaces the
// default class of that name (or adds a class). Every problem of the file
// is reported at once.
func (c *Config) LoadFile(path string) error {
	var f fileConfig
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading config %s: %w", path, err)
	}
	if err := hclsimple.Decode(path, src, nil, &f); err != nil {
		return fmt.Errorf("reading config %s: %w", path, fileError(err, src))
	}
	errs := c.applyFile(&f)
	if len(errs) > 0 {
		return fmt.Errorf("config %s: %w", path, errors.Join(errs...))
	}
	return nil
}

func (c *Config) applyFile(f *fileConfig) []error {
	var errs []error
	setStr(&c.Listen, f.Listen)
	setStr(&c.LogLevel, f.LogLevel)
	setStr(&c.DataDir, f.DataDir)
	setStr(&c.SystemJobs, f.SystemJobs)
	setStr(&c.Placement, f.Placement)
	setStr(&c.Reclaim, f.Reclaim)
	setStr(&c.FairShareClasses, f.FairShareClasses)
	setStr(&c.FairShareRule, f.FairShareRule)
	setStr(&c.QueueOrder, f.QueueOrder)
	if f.FairShareGap != nil {
		c.FairShareGap = *f.FairShareGap
	}
	setStr(&c.SubmitterTokens, f.SubmitterTokens)
	if f.EnableDebug != nil {
		c.EnableDebug = *f.EnableDebug
	}
	if f.DisablePreemption != nil {
		c.DisablePreemption = *f.DisablePreemption
	}
	if f.Governed != nil {
		c.Governed = f.Governed
	}
	for name, d := range map[string]struct {
		dst *time.Duration
		src *string
	}{
		"starvation_timeout": {&c.StarvationTimeout, f.StarvationTimeout},
		"move_min_run":       {&c.MoveMinRun, f.MoveMinRun},
		"fair_min_run":       {&c.FairMinRun, f.FairMinRun},
		"requeue_rest":       {&c.RequeueRest, f.RequeueRest},
		"reclaim_max_loss":   {&c.ReclaimMaxLoss, f.ReclaimMaxLoss},
		"gang_timeout":       {&c.GangTimeout, f.GangTimeout},
		"cycle_interval":     {&c.CycleInterval, f.CycleInterval},
		"resync_backoff_max": {&c.ResyncBackoffMax, f.ResyncBackoffMax},
		"backoff_base":       {&c.BackoffBase, f.BackoffBase},
		"backoff_cap":        {&c.BackoffCap, f.BackoffCap},
	} {
		if err := setDuration(d.dst, d.src); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	c.Reclaim = engine.ReclaimWithBound(c.Reclaim, f.Reclaim != nil, c.ReclaimMaxLoss)
	if n := f.Nomad; n != nil {
		setStr(&c.Nomad.Address, n.Address)
		setStr(&c.Nomad.Token, n.Token)
		setStr(&c.Nomad.CACert, n.CACert)
		setStr(&c.Nomad.ClientCert, n.ClientCert)
		setStr(&c.Nomad.ClientKey, n.ClientKey)
		setStr(&c.Nomad.TLSServerName, n.TLSServerName)
		if n.TLSSkipVerify != nil {
			c.Nomad.TLSSkipVerify = *n.TLSSkipVerify
		}
		if n.VerifyHTTPSClient != nil {
			v := *n.VerifyHTTPSClient
			c.Nomad.VerifyHTTPSClient = &v
		}
	}
	errs = append(errs, c.applySecurity(f)...)
	errs = append(errs, c.applyLedger(f.Ledger)...)
	errs = append(errs, c.applyIdle(f.Idle)...)
	errs = append(errs, c.applyHA(f.HA)...)
	errs = append(errs, c.applyAdmission(fileAdmission{KeyFile: f.AdmissionKeyFile, KeyNamespace: f.AdmissionKeyNS})...)
	for _, fc := range f.Classes {
		cl := Class{Priority: fc.Priority, Preemptible: true}
		if fc.Preemptible != nil {
			cl.Preemptible = *fc.Preemptible
		}
		if fc.Restricted != nil {
			cl.Restricted = *fc.Restricted
		}
		c.Classes[fc.Name] = cl
	}
	sortErrs(errs)
	return errs
}

func setStr(dst, src *string) {
	if src != nil {
		*dst = *src
	}
}

func setDuration(dst *time.Duration, src *string) error {
	if src == nil {
		return nil
	}
	d, err := time.ParseDuration(*src)
	if err != nil {
		return err
	}
	*dst = d
	return nil
}
