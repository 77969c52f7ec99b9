package config

import (
	"errors"
	"os"
	"strings"
)

// Admission configures the admission seal's key (governor/jobmeta): a
// job's governor record counts only when the governor sealed it with this
// key.
type Admission struct {
	// KeyFile holds the key in base64 (at least 32 bytes). Give every
	// governor of an HA pair the same file. Empty: the key is generated
	// once and kept in Nomad Variables.
	KeyFile string
	// KeyNamespace is the namespace of the Nomad variable that keeps the
	// generated key ("default"). Tenant ACL policies must not grant
	// variable read there.
	KeyNamespace string
}

// fileAdmission holds the top-level admission_key_file and
// admission_key_namespace attributes.
type fileAdmission struct {
	KeyFile, KeyNamespace *string
}

// applyAdmission applies the admission_key_* attributes.
func (c *Config) applyAdmission(f fileAdmission) []error {
	setStr(&c.Admission.KeyFile, f.KeyFile)
	setStr(&c.Admission.KeyNamespace, f.KeyNamespace)
	var errs []error
	if c.Admission.KeyFile != "" {
		if _, err := os.Stat(c.Admission.KeyFile); err != nil {
			errs = append(errs, errors.New("admission_key_file: "+err.Error()))
		}
	}
	if strings.ContainsAny(c.Admission.KeyNamespace, " /") {
		errs = append(errs, errors.New("admission_key_namespace: not a namespace name: "+c.Admission.KeyNamespace))
	}
	return errs
}
