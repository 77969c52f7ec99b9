package console_test

import (
	"encoding/json"
	"html/template"
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

// waiting builds a held job's verdict whose reason is its failing check,
// written as the engine writes it ("<name>: <text>").
func waiting(ns, id string, pos, tpos int, failing engine.Check) engine.Verdict {
	v := queued(ns, id, "standard", pos, tpos, "")
	v.Checks = append(v.Checks, failing)
	v.Reason = failing.Name + ": " + failing.Text()
	return v
}

var (
	limitCheck = engine.Check{Name: "limit", Tenant: "ml", Amounts: []engine.Amount{
		{Resource: "cpu", Need: 1000, Used: 0, Cap: 8000, Borrowable: -1},
		{Resource: "gpu", Need: 2, Used: 1, Cap: 2, Borrowable: -1, Over: true}}}
	quotaCheck = engine.Check{Name: "quota", Tenant: "ml", Cohort: "research", Amounts: []engine.Amount{
		{Resource: "nvidia/gpu/H200", Need: 4, Used: 2, Cap: 4, Borrowable: 1, Over: true},
		{Resource: "memory", Need: 65536, Used: 0, Cap: 32768, Borrowable: -1, Over: true}}}
	fitCheck   = engine.Check{Name: "fit", Detail: "no node of pool default has 8 free nvidia/gpu/H200"}
	orderCheck = engine.Check{Name: "order", Detail: "waiting behind ml/head, which has waited 2h0m0s (longer than the starvation timeout 1h0m0s) and holds a reservation: 2 nodes"}
	metaCheck  = engine.Check{Name: "limit", Tenant: "ml", MetaErr: "allot.limit.gpu: not a number",
		Amounts: []engine.Amount{{Resource: "gpu", Need: 1, Used: 0, Cap: 0, Borrowable: -1, Over: true}}}
)

// reasonPlan queues one job per kind of reason in namespace ml, and one
// whose reason is not its failing check's text (shown as written).
func reasonPlan() *engine.Plan {
	other := waiting("ml", "child", 9, 9, limitCheck)
	other.Reason = "dispatched child over the tenant's limit"
	return testPlan(waiting("ml", "lim", 4, 3, limitCheck), waiting("ml", "quo", 5, 4, quotaCheck),
		waiting("ml", "fitj", 6, 5, fitCheck), waiting("ml", "ord", 7, 6, orderCheck), waiting("ml", "meta", 8, 7, metaCheck), other)
}

func TestReasonsInThePagesLanguage(t *testing.T) {
	srv, _ := newGovernor(t, reasonPlan(), false, false)
	b := newBrowser(t, srv)
	b.signIn("ml")
	esc := template.HTMLEscapeString
	gpuLimitZH := "上限：需要 2 gpu；租户 ml 已用 1，上限 2"
	quotaZH := "配额：需要 4 nvidia/gpu/H200；租户 ml 已用 2，配额 4，共享组 research 还可借出 1；需要 " +
		quota.Format("memory", 65536) + " memory；租户 ml 已用 " + quota.Format("memory", 0) + "，配额 " + quota.Format("memory", 32768)
	cases := map[string]struct {
		id     string
		en, zh string
	}{
		"limit": {"lim", "limit: needs 2 gpu; tenant ml uses 1 of limit 2", gpuLimitZH},
		"quota": {"quo", "quota: " + quotaCheck.Text(), quotaZH},
		"fit":   {"fitj", "fit: " + fitCheck.Detail, "资源放置：" + fitCheck.Detail},
		"order": {"ord", "order: " + orderCheck.Detail, "排队顺序：" + orderCheck.Detail},
		"meta": {"meta", "limit: needs 1 gpu; tenant ml uses 0 of limit 0 (namespace quota meta is invalid: allot.limit.gpu: not a number)",
			"上限：需要 1 gpu；租户 ml 已用 0，上限 0（命名空间的配额 meta 无效：allot.limit.gpu: not a number）"},
		"not its check": {"child", "dispatched child over the tenant's limit", "dispatched child over the tenant's limit"},
	}
	_, queueEN, _ := b.get("/ui/queue?lang=en")
	_, tenantEN, _ := b.get("/ui/tenants/ml")
	_, queueZH, _ := b.get("/ui/queue?lang=zh")
	_, tenantZH, _ := b.get("/ui/tenants/ml")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.StrContains(t, queueEN, `<td class="reason">`+esc(tc.en)+`</td>`)
			must.StrContains(t, tenantEN, `<td class="reason">`+esc(tc.en)+`</td>`)
			must.StrContains(t, queueZH, `<td class="reason">`+esc(tc.zh)+`</td>`)
			must.StrContains(t, tenantZH, `<td class="reason">`+esc(tc.zh)+`</td>`)
			status, job, _ := b.get("/ui/jobs/ml/" + tc.id + "?lang=zh")
			must.Eq(t, http.StatusOK, status)
			must.StrContains(t, job, `<dd class="reason">`+esc(tc.zh)+`</dd>`)
			status, job, _ = b.get("/ui/jobs/ml/" + tc.id + "?lang=en")
			must.Eq(t, http.StatusOK, status)
			must.StrContains(t, job, `<dd class="reason">`+esc(tc.en)+`</dd>`)
		})
	}
	// The job page's checks: names translated, numbers in the language,
	// free-text details as the engine wrote them.
	_, job, _ := b.get("/ui/jobs/ml/lim?lang=zh")
	must.StrContains(t, job, `<th scope="row">优先级类别</th>`)
	must.StrContains(t, job, `<th scope="row">上限</th>`)
	must.StrContains(t, job, `<td class="reason">需要 2 gpu；租户 ml 已用 1，上限 2</td>`)
	_, job, _ = b.get("/ui/jobs/ml/lim?lang=en")
	must.StrContains(t, job, `<th scope="row">limit</th>`)
	must.StrContains(t, job, `<td class="reason">needs 2 gpu; tenant ml uses 1 of limit 2</td>`)
}

func TestQueueAPICarriesTheReasonsCheck(t *testing.T) {
	srv, _ := newGovernor(t, reasonPlan(), false, false)
	b := newBrowser(t, srv)
	status, body, _ := b.get("/allot/v1/queue", "X-Nomad-Token", "ml")
	must.Eq(t, http.StatusOK, status)
	var q allotapi.Queue
	must.NoError(t, json.Unmarshal([]byte(body), &q))
	byID := map[string]allotapi.QueueEntry{}
	for _, e := range q.Jobs {
		byID[e.JobID] = e
	}
	must.Eq(t, "limit: needs 2 gpu; tenant ml uses 1 of limit 2", byID["lim"].Reason, must.Sprint("the reason's text is unchanged"))
	must.Eq(t, &allotapi.Check{Name: "limit", Detail: "needs 2 gpu; tenant ml uses 1 of limit 2", Tenant: "ml",
		Amounts: []allotapi.Amount{{Resource: "cpu", Need: 1000, Cap: 8000, Borrowable: -1},
			{Resource: "gpu", Need: 2, Used: 1, Cap: 2, Borrowable: -1, Over: true}}}, byID["lim"].ReasonCheck)
	must.Eq(t, "research", byID["quo"].ReasonCheck.Cohort)
	must.Eq(t, &allotapi.Check{Name: "fit", Detail: fitCheck.Detail}, byID["fitj"].ReasonCheck)
	must.Nil(t, byID["child"].ReasonCheck, must.Sprint("a reason that is not its check's text carries none"))
	must.Nil(t, byID["held"].ReasonCheck)
	must.StrNotContains(t, body, `"ReasonCheck":null`, must.Sprint("absent, not null: old readers see no change"))
}

func TestReasonNamesAreEscaped(t *testing.T) {
	c := engine.Check{Name: "quota", Tenant: hostile, Cohort: "<b>c</b>", Amounts: []engine.Amount{
		{Resource: "gpu", Need: 2, Used: 1, Cap: 2, Borrowable: 0, Over: true}}}
	srv, _ := newGovernor(t, testPlan(waiting("ml", "h", 4, 3, c)), false, false)
	b := newBrowser(t, srv)
	b.signIn("ml")
	for _, path := range []string{"/ui/queue?lang=zh", "/ui/tenants/ml", "/ui/jobs/ml/h", "/ui/queue?lang=en", "/ui/jobs/ml/h"} {
		status, body, _ := b.get(path)
		must.Eq(t, http.StatusOK, status, must.Sprint(path))
		must.StrNotContains(t, withoutTokens(body), hostile, must.Sprint(path))
		must.StrNotContains(t, withoutTokens(body), "<b>c</b>", must.Sprint(path))
		must.StrContains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", must.Sprint(path))
		must.StrContains(t, body, "&lt;b&gt;c&lt;/b&gt;", must.Sprint(path))
	}
}
