package console

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/idle"
	gq "github.com/allot-sh/allot/governor/quota"
)

// FuzzRequestParams feeds what a browser sends on every page (?lang=, the
// language cookie, Accept-Language, ?next= and ?page=) to the console's
// readers of them. Seeds: testdata/fuzz/FuzzRequestParams. Properties: no
// panic; the language is always English or Chinese; a redirect target
// stays inside the console (starts with /ui/, never //, no backslash or
// line break) and is the input itself when accepted; a page number is at
// least 1.
func FuzzRequestParams(f *testing.F) {
	f.Fuzz(func(t *testing.T, lang, cookie, accept, next, page string) {
		r := httptest.NewRequest("GET", "/ui/queue", nil)
		r.URL.RawQuery = url.Values{"lang": {lang}, "page": {page}}.Encode()
		r.Header.Set("Accept-Language", accept)
		r.Header.Set("Cookie", langCookie+"="+cookie)
		code := langOf(r).Code
		must.True(t, code == LangEN || code == LangZH, must.Sprintf("language %q", code))
		got := fromAcceptLanguage(accept)
		must.True(t, got == LangEN || got == LangZH, must.Sprintf("Accept-Language gave %q", got))

		to := safeNext(next)
		must.StrHasPrefix(t, Prefix, to)
		must.False(t, strings.HasPrefix(to, "//") || strings.ContainsAny(to, "\\\r\n"), must.Sprintf("redirect %q", to))
		must.True(t, to == next || to == Prefix)

		must.Positive(t, atoi(page))
	})
}

// FuzzExemptForm feeds the idle page's exemption form to its checker.
// Seeds: testdata/fuzz/FuzzExemptForm. Properties: no panic; a refusal
// wraps errExemptForm; an accepted form gives the meta key of the trimmed
// job ID and a value that governor/idle reads back (ParseExemption) as
// the expiry allotapi.ExemptionExpiry gives (in the future, within
// MaxExemption) and the cleaned reason, bounded by the reason's length
// and by MaxExemptionReason characters.
func FuzzExemptForm(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ns, job, until, reason string) {
		key, val, err := exemptForm{Namespace: ns, Job: job, Until: until, Reason: reason}.meta(now)
		if err != nil {
			must.ErrorIs(t, err, errExemptForm)
			must.Eq(t, "", key+val)
			return
		}
		must.Eq(t, allotapi.ExemptKeyPrefix+strings.TrimSpace(job), key)
		must.LessEq(t, len(reason)+len("until=2006-01-02T15:04:05Z;reason="), len(val))
		e, err := idle.ParseExemption(val)
		must.NoError(t, err, must.Sprintf("value %q", val))
		want, err := allotapi.ExemptionExpiry(strings.TrimSpace(until), now)
		must.NoError(t, err)
		must.Eq(t, want, e.Until)
		must.True(t, e.Until.After(now) && e.Until.Sub(now) <= allotapi.MaxExemption)
		wantReason, err := allotapi.ExemptionReason(reason)
		must.NoError(t, err)
		must.Eq(t, wantReason, e.Reason)
		must.LessEq(t, allotapi.MaxExemptionReason, utf8.RuneCountInString(e.Reason))
	})
}

// FuzzQuotaForm feeds the tenant page's quota form to its checker. Seeds:
// testdata/fuzz/FuzzQuotaForm. Properties: no panic; a refusal wraps
// errQuotaForm; an accepted form sets one to three keys, each
// allot.{quota,limit,lend}.<resource> of the trimmed resource, whose
// value is the trimmed field and parses as an amount of that resource.
func FuzzQuotaForm(f *testing.F) {
	f.Fuzz(func(t *testing.T, res, quota, limit, lend string) {
		out, err := quotaForm{Resource: res, Quota: quota, Limit: limit, Lend: lend}.edits()
		if err != nil {
			must.ErrorIs(t, err, errQuotaForm)
			must.MapEmpty(t, out)
			return
		}
		r := strings.TrimSpace(res)
		fields := map[string]string{gq.PrefixQuota + r: quota, gq.PrefixLimit + r: limit, gq.PrefixLend + r: lend}
		must.Between(t, 1, len(out), 3)
		for k, v := range out {
			in, ok := fields[k]
			must.True(t, ok, must.Sprintf("key %q", k))
			must.Eq(t, strings.TrimSpace(in), v)
			_, err := gq.ParseAmount(r, v)
			must.NoError(t, err)
		}
	})
}
