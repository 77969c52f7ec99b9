package console

import (
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// funcs are the template functions. None returns template.HTML: every
// value reaches the page through html/template's escaping.
var funcs = template.FuncMap{
	"res":    formatRequest,
	"amount": quota.Format,
	"dur":    formatDuration,
	"ts":     formatTime,
	"jobURL": jobURL,
	"releaseURL": func(ns, id string) string {
		return Prefix + "release/" + url.PathEscape(ns) + "/" + url.PathEscape(id)
	},
	"requeueURL": requeueURL,
	"tenantURL":  tenantURL,
	"pct":        percent,
	"hundred":    func(f float64) float64 { return 100 * f },
}

// formatRequest renders a resource map sorted by name: "cpu 4000 MHz,
// gpu 2".
func formatRequest(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, k+" "+quota.Format(k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// formatDuration renders a wait for people: 45s, 12m5s, 3h12m, 2d4h.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Hour:
		return d.String()
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// formatTime renders an instant in UTC; the zero time is "".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// jobURL is the job page of ns/id; any character of the ID is escaped.
func jobURL(ns, id string) string {
	return Prefix + "jobs/" + url.PathEscape(ns) + "/" + url.PathEscape(id)
}

// tenantURL is the tenant page of ns.
func tenantURL(ns string) string { return Prefix + "tenants/" + url.PathEscape(ns) }

// percent is 100·a/b, 0 when b is 0, capped at 100.
func percent(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	p := 100 * a / b
	if p > 100 {
		return 100
	}
	return p
}
