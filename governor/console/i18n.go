package console

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Languages the console speaks; the first is the default.
const (
	LangEN = "en"
	LangZH = "zh"
)

// langCookie remembers the language a user switched to.
const langCookie = "allot_lang"

// msg is one label in both languages. A message catalogue entry without
// both is a defect (TestCatalogueComplete).
type msg struct{ en, zh string }

// Lang translates labels into one language. Templates call {{.L.T "key"}}
// and {{.L.F "key" args...}}.
type Lang struct {
	// Code is "en" or "zh"; the page's <html lang> is Tag.
	Code string
}

// Tag is the BCP 47 tag for <html lang>.
func (l Lang) Tag() string {
	if l.Code == LangZH {
		return "zh-Hans"
	}
	return "en"
}

// T returns the label key in l's language; an unknown key shows as
// itself (and fails TestTemplatesUseKnownKeys).
func (l Lang) T(key string) string {
	m, ok := catalogue[key]
	if !ok {
		return key
	}
	if l.Code == LangZH {
		return m.zh
	}
	return m.en
}

// F formats the label key (a fmt format) with args.
func (l Lang) F(key string, args ...any) string {
	return fmt.Sprintf(l.T(key), args...)
}

// Other is the language the switch offers.
func (l Lang) Other() Lang {
	if l.Code == LangZH {
		return Lang{Code: LangEN}
	}
	return Lang{Code: LangZH}
}

// Name is the language's name in itself.
func (l Lang) Name() string {
	if l.Code == LangZH {
		return "中文"
	}
	return "English"
}

// langOf chooses the language of r: ?lang=, then the cookie, then
// Accept-Language, then English.
func langOf(r *http.Request) Lang {
	if c := known(r.URL.Query().Get("lang")); c != "" {
		return Lang{Code: c}
	}
	if ck, err := r.Cookie(langCookie); err == nil {
		if c := known(ck.Value); c != "" {
			return Lang{Code: c}
		}
	}
	return Lang{Code: fromAcceptLanguage(r.Header.Get("Accept-Language"))}
}

// known maps a language tag to a supported code, "" when unsupported.
func known(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	switch {
	case tag == "zh" || strings.HasPrefix(tag, "zh-"):
		return LangZH
	case tag == "en" || strings.HasPrefix(tag, "en-"):
		return LangEN
	}
	return ""
}

// fromAcceptLanguage picks the supported language with the highest q
// (ties: first listed); English when none is supported.
func fromAcceptLanguage(h string) string {
	type cand struct {
		code  string
		q     float64
		order int
	}
	var cs []cand
	for i, part := range strings.Split(h, ",") {
		tag, params, _ := strings.Cut(part, ";")
		code := known(tag)
		if code == "" {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if q > 0 {
			cs = append(cs, cand{code, q, i})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].q > cs[j].q })
	if len(cs) == 0 {
		return LangEN
	}
	return cs[0].code
}
