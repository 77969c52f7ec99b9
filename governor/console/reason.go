package console

import (
	"strconv"
	"strings"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/quota"
)

// reasonMessages are the admission checks' names and the templates of
// the checks whose numbers are structured (limit, quota). Checks whose
// only content is a free-text detail (class, type, backoff, fit, order,
// runtime) show their translated name with the detail as the engine wrote
// it.
var reasonMessages = map[string]msg{
	"check.class":   {"class", "优先级类别"},
	"check.type":    {"type", "作业类型"},
	"check.backoff": {"backoff", "退避"},
	"check.limit":   {"limit", "上限"},
	"check.quota":   {"quota", "配额"},
	"check.fit":     {"fit", "资源放置"},
	"check.order":   {"order", "排队顺序"},
	"check.runtime": {"runtime", "运行时长"},
	// reason.named is "<check>: <text>", the form of a queued job's reason.
	"reason.named":   {"%s: %s", "%s：%s"},
	"reason.sep":     {"; ", "；"},
	"reason.limit":   {"needs %s; tenant %s uses %s of limit %s", "需要 %s；租户 %s 已用 %s，上限 %s"},
	"reason.quota":   {"needs %s; tenant %s uses %s of quota %s", "需要 %s；租户 %s 已用 %s，配额 %s"},
	"reason.lend":    {" and cohort %s can lend %s more", "，共享组 %s 还可借出 %s"},
	"reason.meta":    {" (namespace quota meta is invalid: %s)", "（命名空间的配额 meta 无效：%s）"},
	"reason.nolimit": {"no limit applies", "无上限"},
	"reason.noquota": {"no quota applies", "无配额限制"},
}

// checkName is a check's name in l's language; a name the catalogue does
// not know shows as itself.
func (l Lang) checkName(name string) string {
	if _, ok := catalogue["check."+name]; ok {
		return l.T("check." + name)
	}
	return name
}

// Reason renders a job's reason in l's language from the failing check
// the API names (allotapi.QueueEntry.ReasonCheck): "<check>: <text>".
// Without one, the reason is shown as the engine wrote it.
func (l Lang) Reason(reason string, c *allotapi.Check) string {
	if c == nil {
		return reason
	}
	return l.F("reason.named", l.checkName(c.Name), l.CheckText(*c))
}

// CheckName is the check's name for the job page's table.
func (l Lang) CheckName(c allotapi.Check) string { return l.checkName(c.Name) }

// CheckText renders one check's text in l's language: limit and quota
// checks from their numbers (a failing check shows only the resources it
// fails on, as the engine's text does); any other check shows its detail
// untranslated. In English it equals the engine's text (engine.Check.Text).
func (l Lang) CheckText(c allotapi.Check) string {
	if c.Name != "limit" && c.Name != "quota" {
		return c.Detail
	}
	if len(c.Amounts) == 0 {
		if c.Detail == "no "+c.Name+" applies" {
			return l.T("reason.no" + c.Name)
		}
		return c.Detail
	}
	var parts []string
	for _, a := range c.Amounts {
		if c.OK || a.Over {
			parts = append(parts, l.amountText(c, a))
		}
	}
	s := strings.Join(parts, l.T("reason.sep"))
	if c.MetaErr != "" {
		s += l.F("reason.meta", c.MetaErr)
	}
	return s
}

// amountText is one resource's numbers of a limit or quota check.
func (l Lang) amountText(c allotapi.Check, a allotapi.Amount) string {
	s := l.F("reason."+c.Name, needOf(a.Resource, a.Need), c.Tenant,
		quota.Format(a.Resource, a.Used), quota.Format(a.Resource, a.Cap))
	if a.Borrowable >= 0 && c.Name == "quota" {
		s += l.F("reason.lend", c.Cohort, quota.Format(a.Resource, a.Borrowable))
	}
	return s
}

// needOf is a request's amount with its resource ("2 gpu", "4000 MHz
// cpu"), formatted like the engine's reasons.
func needOf(r string, n int64) string {
	if quota.Unit(r) != "" {
		return quota.Format(r, n) + " " + r
	}
	return strconv.FormatInt(n, 10) + " " + r
}
