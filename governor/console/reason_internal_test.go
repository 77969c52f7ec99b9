package console

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/engine"
)

// wire is the API's form of an engine check (governor/server apiCheck,
// without redaction).
func wire(c engine.Check) allotapi.Check {
	out := allotapi.Check{Name: c.Name, OK: c.OK, Detail: c.Text(), Permanent: c.Permanent, Tenant: c.Tenant,
		Cohort: c.Cohort, MetaErr: c.MetaErr}
	for _, a := range c.Amounts {
		out.Amounts = append(out.Amounts, allotapi.Amount{Resource: a.Resource, Need: a.Need, Used: a.Used,
			Cap: a.Cap, Borrowable: a.Borrowable, Over: a.Over})
	}
	return out
}

// The English rendering from the structured fields is the engine's own
// text, for passing and failing checks of every kind.
func TestCheckTextEnglishIsTheEngines(t *testing.T) {
	gpu := engine.Amount{Resource: "gpu", Need: 2, Used: 1, Cap: 2, Borrowable: -1, Over: true}
	mem := engine.Amount{Resource: "memory", Need: 2048, Used: 1024, Cap: 65536, Borrowable: -1}
	h200 := engine.Amount{Resource: "nvidia/gpu/H200", Need: 4, Used: 2, Cap: 4, Borrowable: 3}
	cases := map[string]struct {
		check engine.Check
		zh    string
	}{
		"limit fails": {engine.Check{Name: "limit", Tenant: "t", Amounts: []engine.Amount{mem, gpu}},
			"需要 2 gpu；租户 t 已用 1，上限 2"},
		"limit passes": {engine.Check{Name: "limit", OK: true, Tenant: "t", Amounts: []engine.Amount{{Resource: "gpu", Need: 1, Used: 0, Cap: 2, Borrowable: -1}}},
			"需要 1 gpu；租户 t 已用 0，上限 2"},
		"quota borrows": {engine.Check{Name: "quota", OK: true, Tenant: "t", Cohort: "c", Amounts: []engine.Amount{h200}},
			"需要 4 nvidia/gpu/H200；租户 t 已用 2，配额 4，共享组 c 还可借出 3"},
		"quota meta error": {engine.Check{Name: "quota", Tenant: "t", Cohort: "c", MetaErr: "bad", Amounts: []engine.Amount{gpu}},
			"需要 2 gpu；租户 t 已用 1，配额 2（命名空间的配额 meta 无效：bad）"},
		"no limit":  {engine.Check{Name: "limit", OK: true, Tenant: "t"}, "无上限"},
		"no quota":  {engine.Check{Name: "quota", OK: true, Tenant: "t"}, "无配额限制"},
		"fit":       {engine.Check{Name: "fit", Detail: "no room"}, "no room"},
		"class":     {engine.Check{Name: "class", OK: true, Detail: "class standard (priority 50)"}, "class standard (priority 50)"},
		"backoff":   {engine.Check{Name: "backoff", Detail: "requeued 2 times"}, "requeued 2 times"},
		"runtime":   {engine.Check{Name: "runtime", Permanent: true, Detail: "ran 2h"}, "ran 2h"},
		"type":      {engine.Check{Name: "type", Permanent: true, Detail: "system jobs refused"}, "system jobs refused"},
		"order":     {engine.Check{Name: "order", Detail: "waiting behind a/b"}, "waiting behind a/b"},
		"unknown":   {engine.Check{Name: "future", Detail: "something new"}, "something new"},
		"limit mem": {engine.Check{Name: "limit", OK: true, Tenant: "t", Amounts: []engine.Amount{mem}}, ""},
	}
	en, zh := Lang{Code: LangEN}, Lang{Code: LangZH}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := wire(tc.check)
			must.Eq(t, tc.check.Text(), en.CheckText(c))
			must.Eq(t, tc.check.Name+": "+tc.check.Text(), en.Reason("ignored", &c))
			if tc.zh != "" {
				must.Eq(t, tc.zh, zh.CheckText(c))
			}
		})
	}
	must.Eq(t, "as written", zh.Reason("as written", nil))
}

// Every check the engine names has a name in both languages.
func TestCheckNamesTranslated(t *testing.T) {
	for _, n := range []string{"class", "type", "backoff", "limit", "quota", "fit", "order", "runtime"} {
		_, ok := catalogue["check."+n]
		must.True(t, ok, must.Sprint(n))
		must.NotEq(t, n, Lang{Code: LangZH}.checkName(n))
		must.Eq(t, n, Lang{Code: LangEN}.checkName(n))
	}
	for _, k := range []string{"reason.named", "reason.sep", "reason.limit", "reason.quota", "reason.lend", "reason.meta", "reason.nolimit", "reason.noquota"} {
		_, ok := catalogue[k]
		must.True(t, ok, must.Sprint(k))
	}
}
