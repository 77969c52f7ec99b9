//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/browser"
)

// consoleViews are the console's pages, by screenshot name; the job page
// is a-train's (team-a).
var consoleViews = []struct{ name, path string }{
	{"overview", "/ui/"},
	{"queue", "/ui/queue"},
	{"tenants", "/ui/tenants/"},
	{"tenant", "/ui/tenants/team-a"},
	{"job", "/ui/jobs/team-a/a-train"},
	{"usage", "/ui/usage?window=1h"},
	{"idle", "/ui/idle"},
	{"capacity", "/ui/capacity?window=1h"},
	{"audit", "/ui/audit"},
}

// TestE2E_Console drives the console in headless Chromium against one
// real cluster (ACLs on, governor with ledger and idle detection), as an
// operator (management token) and as team-a (its tenant token). Set
// ALLOT_SCREENSHOTS=1 (make screenshots) to save docs/img/console-*.png.
func TestE2E_Console(t *testing.T) {
	start := time.Now()
	e := newConsoleEnv(t)
	t.Logf("cluster, governor and jobs ready after %s", time.Since(start).Round(time.Second))
	ops, tenant := e.signIn("management"), e.signIn("team-a")

	t.Run("every view loads with no console error and passes the accessibility check", func(t *testing.T) {
		for who, b := range map[string]*browser.Browser{"management": ops, "team-a": tenant} {
			for _, v := range consoleViews {
				b.ClearErrors()
				e.page(b, v.path)
				must.SliceEmpty(t, b.Errors(), must.Sprintf("%s, %s: console errors", who, v.path))
				problems, err := b.Accessibility()
				must.NoError(t, err)
				must.SliceEmpty(t, problems, must.Sprintf("%s, %s: accessibility", who, v.path))
				if who == "management" {
					screenshot(t, b, v.name)
				}
			}
		}
	})

	t.Run("the overview shows the pools now and the last hour", func(t *testing.T) {
		// The running jobs' H200s, as Nomad allocated them.
		gpus := 0
		for _, ns := range []string{"team-a", "team-b"} {
			stubs, _, err := e.c.API.Allocations().List(&api.QueryOptions{Namespace: ns})
			must.NoError(t, err)
			for _, s := range stubs {
				if s.ClientStatus != "running" {
					continue
				}
				a, _, err := e.c.API.Allocations().Info(s.ID, &api.QueryOptions{Namespace: ns})
				must.NoError(t, err)
				for _, tr := range a.AllocatedResources.Tasks {
					for _, d := range tr.Devices {
						gpus += len(d.DeviceIDs)
					}
				}
			}
		}
		must.Eq(t, 2, gpus, must.Sprint("a-train and b-run hold one H200 each"))
		// Both tokens see the same per-pool totals (capacity is not tenant
		// data): capacity 4, allocated = the running jobs' GPUs, the rest
		// idle, none down; beneath, the ledger's last hour.
		want := []string{"gpu", "nvidia/gpu/H200", "now", "4", fmt.Sprint(gpus), fmt.Sprint(4 - gpus), "0"}
		for who, b := range map[string]*browser.Browser{"management": ops, "team-a": tenant} {
			e.c.Eventually(30*time.Second, who+": live pools and the last hour", func() error {
				e.page(b, "/ui/")
				rows, err := b.Table("#pools-table")
				if err != nil || len(rows) != 2 || len(rows[0]) < len(want) || strings.Join(rows[0][:len(want)], "|") != strings.Join(want, "|") ||
					rows[1][0] != "gpu" || !strings.HasPrefix(rows[1][2], "last 60 min") {
					return fmt.Errorf("pools rows %q (%v), want first %q", rows, err, want)
				}
				return nil
			})
		}
	})

	t.Run("the report views show the cluster", func(t *testing.T) {
		// Capacity: the gpu pool's H200s, up and partly allocated.
		e.c.Eventually(30*time.Second, "capacity of the gpu pool", func() error {
			e.page(ops, "/ui/capacity?window=1h")
			rows, err := ops.Table("#capacity-table")
			if err != nil || len(rows) != 1 || rows[0][0] != "gpu" || rows[0][1] != "nvidia/gpu/H200" ||
				rows[0][2] == "0.000" || rows[0][3] == "0.000" {
				return fmt.Errorf("capacity rows %q (%v)", rows, err)
			}
			return nil
		})
		// Idle: a-train is a candidate with its evidence.
		e.page(ops, "/ui/idle")
		rows, err := ops.Table("#idle-candidates")
		must.NoError(t, err)
		must.Eq(t, "team-a", rows[0][0])
		must.Eq(t, "a-train", rows[0][1])
		must.StrHasPrefix(t, "idle-held", rows[0][4])
		must.StrContains(t, rows[0][9], "samples")
		// Usage: both tenants for the operator, team-a alone for team-a.
		for who, want := range map[*browser.Browser][]string{ops: {"team-a", "team-b"}, tenant: {"team-a"}} {
			e.page(who, "/ui/usage?window=1h&by=tenant")
			rows, err := who.Table("#usage-table")
			must.NoError(t, err)
			var got []string
			for _, r := range rows {
				got = append(got, r[0])
			}
			must.SliceContainsAll(t, want, got)
		}
	})

	t.Run("queue positions equal allotctl queue -json", func(t *testing.T) {
		for who, b := range map[string]*browser.Browser{"management": ops, "team-a": tenant} {
			e.page(b, "/ui/queue")
			rows, err := b.Table("table.queue")
			must.NoError(t, err)
			var q allotapi.Queue
			must.NoError(t, json.Unmarshal([]byte(e.ctl(who, "queue", "-json")), &q))
			var want, got [][]string
			for _, j := range q.Jobs {
				want = append(want, []string{fmt.Sprint(j.Position), fmt.Sprint(j.TenantPosition), j.JobID, j.Namespace})
			}
			for _, r := range rows {
				got = append(got, r[:4])
			}
			must.Eq(t, want, got, must.Sprintf("%s: console queue vs allotctl queue -json", who))
			must.Eq(t, 3, q.Total)
			if who == "management" {
				must.Len(t, 3, got)
			} else {
				must.Len(t, 2, got, must.Sprint("team-a sees its two queued jobs of the three"))
			}
		}
	})

	t.Run("a tenant sees no row of another tenant and gets 403 on its pages", func(t *testing.T) {
		// The whole document, hidden parts and attributes included.
		for _, v := range append(consoleViews, struct{ name, path string }{"", "/ui/audit?kind=idle:"}) {
			e.page(tenant, v.path)
			var html string
			must.NoError(t, tenant.Eval(`document.documentElement.outerHTML`, &html))
			for _, foreign := range []string{"team-b", "b-run", "b-wait"} {
				must.StrNotContains(t, html, foreign, must.Sprintf("%s shows %q to team-a", v.path, foreign))
			}
		}
		for _, path := range []string{"/ui/jobs/team-b/b-run", "/ui/jobs/team-b/b-wait", "/ui/tenants/team-b"} {
			status, err := tenant.Navigate(e.g.Addr + path)
			must.NoError(t, err)
			must.Eq(t, 403, status, must.Sprintf("GET %s as team-a", path))
			must.StrNotContains(t, text(t, tenant), "b-run")
		}
		tenant.ClearErrors() // the 403s are logged as failed loads
		// The operator does see team-b.
		e.page(ops, "/ui/queue")
		must.StrContains(t, text(t, ops), "b-wait")
	})

	t.Run("usage CSV export equals allotctl report usage -csv", func(t *testing.T) {
		for who, b := range map[string]*browser.Browser{"management": ops, "team-a": tenant} {
			e.page(b, "/ui/usage?window=1h&by=tenant")
			link, err := b.Attr(`a[href^="/ui/usage.csv"]`, "href")
			must.NoError(t, err)
			since, until := csvWindow(t, link)
			// The window ends at the page's "now": segments still
			// accruing reach it a moment later, then both answers are
			// final and must be equal byte for byte.
			var got, want string
			e.c.Eventually(30*time.Second, "the same CSV", func() error {
				status, body, err := b.Fetch(link)
				if err != nil || status != 200 {
					return fmt.Errorf("fetch %s: %d %v", link, status, err)
				}
				got = body
				want = e.ctl(who, "report", "usage", "-since", since, "-until", until, "-by", "tenant", "-csv")
				if got != want {
					return fmt.Errorf("console:\n%s\nallotctl:\n%s", got, want)
				}
				return nil
			})
			must.StrContains(t, got, "team-a")
			if who == "team-a" {
				must.StrNotContains(t, got, "team-b")
			} else {
				must.StrContains(t, got, "team-b")
			}
		}
	})

	t.Run("a quota change made in the console shows in allotctl tenant status and the audit view", func(t *testing.T) {
		e.page(ops, "/ui/tenants/team-a")
		status, err := ops.Submit(`form[action$="/quota"]`, map[string]string{"resource": "gpu", "quota": "1"})
		must.NoError(t, err)
		must.Eq(t, 200, status)
		must.SliceEmpty(t, ops.Errors())
		e.c.Eventually(30*time.Second, "allotctl tenant status shows quota 1", func() error {
			out := e.ctl("management", "tenant", "status", "team-a")
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[0] == "gpu" && f[1] == "1" {
					return nil
				}
			}
			return fmt.Errorf("allotctl tenant status team-a:\n%s", out)
		})
		for who, b := range map[string]*browser.Browser{"management": ops, "team-a": tenant} {
			e.c.Eventually(30*time.Second, who+" sees the change in the audit view", func() error {
				e.page(b, "/ui/audit?tenant=team-a&kind=namespace-meta")
				rows, err := b.Table("#audit-table")
				if err != nil {
					return err
				}
				for _, r := range rows {
					// seq, time, kind, tenant, actor, subject, old → new, detail:
					// the console's write names its token, not "unknown".
					if r[3] == "team-a" && r[5] == "allot.quota.gpu" && r[6] == "allot.quota.gpu: 2 → 1" &&
						r[4] == "Bootstrap Token" {
						return nil
					}
				}
				return fmt.Errorf("audit rows: %q", rows)
			})
		}
		e.page(ops, "/ui/audit")
		screenshot(t, ops, "audit")
	})

	t.Run("an idle exemption granted in the console is written, shown and audited", func(t *testing.T) {
		e.page(ops, "/ui/idle")
		status, err := ops.Submit("#exempt-form", map[string]string{"namespace": "team-a", "job": "a-train",
			"until": "48h", "reason": "console e2e"})
		must.NoError(t, err)
		must.Eq(t, 200, status)
		must.StrContains(t, text(t, ops), "Exemption granted for team-a/a-train.")
		ns, _, err := e.c.API.Namespaces().Info("team-a", nil)
		must.NoError(t, err)
		must.StrContains(t, ns.Meta["allot.idle.exempt.a-train"], ";reason=console e2e")
		e.c.Eventually(30*time.Second, "the exemption on the idle and audit views", func() error {
			e.page(ops, "/ui/idle")
			rows, err := ops.Table("#idle-exemptions")
			if err != nil {
				return err
			}
			if len(rows) != 1 || rows[0][1] != "a-train" || rows[0][3] != "console e2e" {
				return fmt.Errorf("exemptions: %q", rows)
			}
			e.page(ops, "/ui/audit?tenant=team-a")
			if !strings.Contains(text(t, ops), "allot.idle.exempt.a-train") {
				return fmt.Errorf("no audit entry of the exemption")
			}
			return nil
		})
		// A tenant's token is shown no form.
		e.page(tenant, "/ui/idle")
		n, err := tenant.Count("#exempt-form")
		must.NoError(t, err)
		must.Zero(t, n)
		e.page(ops, "/ui/idle")
		screenshot(t, ops, "idle")
	})

	t.Run("html lang and texts switch to Chinese", func(t *testing.T) {
		for _, v := range []struct{ name, path, label string }{
			{"queue", "/ui/queue", "队列"}, {"tenant", "/ui/tenants/team-a", "租户"},
			{"usage", "/ui/usage?window=1h", "用量与成本"}, {"idle", "/ui/idle", "闲置"},
			{"capacity", "/ui/capacity?window=1h", "容量"}, {"audit", "/ui/audit", "审计"},
		} {
			sep := "?"
			if strings.Contains(v.path, "?") {
				sep = "&"
			}
			e.page(ops, v.path+sep+"lang=zh")
			lang, err := ops.Attr("html", "lang")
			must.NoError(t, err)
			must.StrHasPrefix(t, "zh", lang)
			nav, err := ops.Text("nav")
			must.NoError(t, err)
			must.StrContains(t, nav, v.label)
			must.StrNotContains(t, nav, "Queue")
			if v.name == "queue" || v.name == "tenant" {
				screenshot(t, ops, v.name+"-zh")
			}
			if v.name == "usage" {
				head, err := ops.Headers("#usage-table")
				must.NoError(t, err)
				must.Eq(t, []string{"租户", "分配数", "设备小时", "实际使用设备小时", "运行小时", "等待小时", "失败", "被抢占", "重启", "损失工作小时"}, head)
			}
		}
		e.page(ops, "/ui/queue?lang=en")
		lang, err := ops.Attr("html", "lang")
		must.NoError(t, err)
		must.Eq(t, "en", lang)
	})

	t.Run("a phone-width viewport has no horizontal scroll", func(t *testing.T) {
		for who, b := range map[string]*browser.Browser{"management": ops, "team-a": tenant} {
			must.NoError(t, b.SetViewport(390, 844, true))
			for _, v := range consoleViews {
				e.page(b, v.path)
				over, err := b.HorizontalOverflow()
				must.NoError(t, err)
				must.Zero(t, over, must.Sprintf("%s: %s is %d px wider than a 390 px phone", who, v.path, over))
				if v.name == "queue" && who == "team-a" {
					screenshot(t, b, "queue-phone")
				}
			}
			must.NoError(t, b.SetViewport(1280, 900, false))
		}
	})
	t.Logf("console e2e done in %s", time.Since(start).Round(time.Second))
}
