package ckpt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/nomad/helper/pluginutils/hclutils"
	"github.com/shoenig/test/must"
)

// fakeUIDs is a user database for the rules.
func fakeUIDs(users map[string]int) func(string) (int, error) {
	return func(name string) (int, error) {
		if uid, ok := users[name]; ok {
			return uid, nil
		}
		return 0, fmt.Errorf("user: unknown user %s", name)
	}
}

// rules builds user rules over a small user database: toor is a second
// uid-0 account, as some hosts have.
func rules(defaultUser string, allowRoot bool, ns map[string][]string) userRules {
	return userRules{defaultUser: defaultUser, allowRoot: allowRoot, namespaces: ns,
		lookupUID: fakeUIDs(map[string]int{"nobody": 65534, "root": 0, "toor": 0, "svc-prod": 1001, "svc-research": 1002})}
}

// TestAudit1_UserRules is audit #1's user half: no user means nobody, root
// and uid 0 are refused unless allow_root, and a namespace runs only its
// own users.
func TestAudit1_UserRules(t *testing.T) {
	prod := map[string][]string{"ml-prod": {"svc-prod"}, "ml-research": {"svc-research"}}
	tests := map[string]struct {
		rules     userRules
		namespace string
		user      string
		want      string
		wantRule  string // "" when allowed
	}{
		"no user runs as the default user":      {rules: rules("nobody", false, nil), namespace: "ml", want: "nobody"},
		"the default user may be named":         {rules: rules("nobody", false, prod), namespace: "ml-prod", user: "nobody", want: "nobody"},
		"a listed user of the namespace":        {rules: rules("nobody", false, prod), namespace: "ml-prod", user: "svc-prod", want: "svc-prod"},
		"root refused":                          {rules: rules("nobody", false, prod), namespace: "ml-prod", user: "root", wantRule: RuleAllowRoot},
		"root refused even when listed":         {rules: rules("nobody", false, map[string][]string{"ops": {"root"}}), namespace: "ops", user: "root", wantRule: RuleAllowRoot},
		"uid 0 under another name refused":      {rules: rules("nobody", false, map[string][]string{"ops": {"toor"}}), namespace: "ops", user: "toor", wantRule: RuleAllowRoot},
		"numeric uid 0 refused":                 {rules: rules("nobody", false, map[string][]string{"ops": {"0:0"}}), namespace: "ops", user: "0:0", wantRule: RuleAllowRoot},
		"another namespace's user refused":      {rules: rules("nobody", false, prod), namespace: "ml-research", user: "svc-prod", wantRule: RuleNamespaceUsers},
		"namespace without entry: default only": {rules: rules("nobody", false, prod), namespace: "ml-new", user: "svc-research", wantRule: RuleNamespaceUsers},
		"unknown user refused":                  {rules: rules("nobody", false, map[string][]string{"ml": {"ghost"}}), namespace: "ml", user: "ghost", wantRule: RuleUnknownUser},
		"allow_root lets a listed root run":     {rules: rules("nobody", true, map[string][]string{"ops": {"root"}}), namespace: "ops", user: "root", want: "root"},
		"allow_root does not widen the list":    {rules: rules("nobody", true, prod), namespace: "ml-prod", user: "root", wantRule: RuleNamespaceUsers},
		"allow_root with a root default user":   {rules: rules("root", true, nil), namespace: "default", want: "root"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.rules.resolve(tc.namespace, tc.user)
			if tc.wantRule == "" {
				must.NoError(t, err)
				must.Eq(t, tc.want, got)
				return
			}
			must.True(t, errors.Is(err, ErrUserRefused), must.Sprintf("error %v", err))
			must.StrContains(t, err.Error(), "rule "+tc.wantRule)
			must.Eq(t, "", got)
		})
	}
}

func TestUserRulesValidate(t *testing.T) {
	tests := map[string]struct {
		rules   userRules
		wantErr []string
	}{
		"defaults":                  {rules: rules("nobody", false, nil)},
		"root default user":         {rules: rules("root", false, nil), wantErr: []string{`default_user "root" is root`}},
		"uid-0 default user":        {rules: rules("toor", false, nil), wantErr: []string{`default_user "toor" is root`}},
		"root default with allow":   {rules: rules("root", true, nil)},
		"empty default user":        {rules: rules("", false, nil), wantErr: []string{"default_user must not be empty"}},
		"root listed":               {rules: rules("nobody", false, map[string][]string{"ops": {"svc-prod", "0"}}), wantErr: []string{`namespace_users["ops"]: user "0" is root`}},
		"empty names, all reported": {rules: rules("nobody", false, map[string][]string{"": {"x"}, "ml": {""}}), wantErr: []string{"namespace name is empty", `namespace_users["ml"]: a user name is empty`}},
		"unknown users are allowed": {rules: rules("nobody", false, map[string][]string{"ml": {"ldap-user"}})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := tc.rules.validate()
			must.Len(t, len(tc.wantErr), errs, must.Sprintf("errors %v", errs))
			for i, want := range tc.wantErr {
				must.StrContains(t, errs[i].Error(), want)
			}
		})
	}
}

// TestConfigIsolationAndUsers checks the new settings through the plugin's
// hclspec, the way the agent config reaches SetConfig.
func TestConfigIsolationAndUsers(t *testing.T) {
	tests := map[string]struct {
		hcl       string
		wantErr   []string
		isolation string
		users     map[string][]string
	}{
		"defaults: chroot, nobody": {hcl: `config {}`, isolation: IsolationChroot},
		"namespace_users map": {
			hcl:       "config {\n  namespace_users {\n    \"ml-prod\" = [\"svc-prod\"]\n    ml-research = [\"a\", \"b\"]\n  }\n}",
			isolation: IsolationChroot, users: map[string][]string{"ml-prod": {"svc-prod"}, "ml-research": {"a", "b"}},
		},
		"isolation none":          {hcl: `config { isolation = "none" }`, isolation: IsolationNone},
		"unknown isolation":       {hcl: `config { isolation = "docker" }`, wantErr: []string{`isolation "docker" must be "chroot" or "none"`}},
		"no_cgroups with chroot":  {hcl: `config { no_cgroups = true }`, wantErr: []string{"no_cgroups = true needs isolation"}},
		"no_cgroups without":      {hcl: "config {\n  no_cgroups = true\n  isolation = \"none\"\n}", isolation: IsolationNone},
		"root default, no allow":  {hcl: `config { default_user = "root" }`, wantErr: []string{`default_user "root" is root`}},
		"root default with allow": {hcl: "config {\n  default_user = \"root\"\n  allow_root = true\n}", isolation: IsolationChroot},
		"every problem at once": {hcl: "config {\n  isolation = \"x\"\n  default_user = \"root\"\n  checkpoint_root = \"rel\"\n}",
			wantErr: []string{"isolation", "default_user", "checkpoint_root"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var c Config
			hclutils.NewConfigParser(configSpec).ParseHCL(t, tc.hcl, &c)
			s, err := c.validate()
			if len(tc.wantErr) > 0 {
				must.Error(t, err)
				for _, want := range tc.wantErr {
					must.StrContains(t, err.Error(), want)
				}
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.isolation, s.isolation)
			if !c.AllowRoot {
				must.Eq(t, "nobody", s.users.defaultUser)
			}
			must.Eq(t, tc.users, s.users.namespaces)
		})
	}
}

// legacyConfig is the driver as it was before isolation and user rules:
// the universal executor, no cgroups, tasks as root unless they name
// nobody. The stop-protocol tests run on it; isolation has its own tests.
func legacyConfig(root string) *Config {
	return &Config{CheckpointRoot: root, NoCgroups: true, Isolation: IsolationNone,
		DefaultUser: "root", AllowRoot: true, NamespaceUsers: map[string][]string{"default": {"nobody"}}}
}
