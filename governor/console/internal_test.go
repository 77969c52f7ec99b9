package console

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// verbs lists a format's fmt verbs in order ("%d", "%.0f", "%%").
var verbs = regexp.MustCompile(`%[-+# 0]*[0-9]*(\.[0-9]+)?[a-zA-Z%]`)

func TestCatalogueComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range catalogueParts {
		for k := range p {
			must.False(t, seen[k], must.Sprintf("%s: in two catalogue parts", k))
			seen[k] = true
		}
	}
	for key, m := range catalogue {
		must.NotEq(t, "", strings.TrimSpace(m.en), must.Sprintf("%s: no English", key))
		must.NotEq(t, "", strings.TrimSpace(m.zh), must.Sprintf("%s: no Chinese", key))
		must.Eq(t, verbs.FindAllString(m.en, -1), verbs.FindAllString(m.zh, -1), must.Sprintf("%s: format verbs differ", key))
	}
}

// usedKey finds label keys in templates ({{.L.T "k"}}, {{$.L.F "k" ...}})
// and in Go code (q.L.T("k"), q.L.F("k", ...)).
var usedKey = regexp.MustCompile(`\.L\.[TF](?: |\()"([a-z]+(?:\.[a-z]+)+)"`)

func TestTemplatesUseKnownKeys(t *testing.T) {
	var used []string
	err := fs.WalkDir(assets, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		for _, m := range usedKey.FindAllStringSubmatch(string(b), -1) {
			used = append(used, m[1])
		}
		return nil
	})
	must.NoError(t, err)
	goFiles, err := filepath.Glob("*.go")
	must.NoError(t, err)
	for _, f := range goFiles {
		b, err := os.ReadFile(f)
		must.NoError(t, err)
		for _, m := range usedKey.FindAllStringSubmatch(string(b), -1) {
			used = append(used, m[1])
		}
	}
	must.Greater(t, 100, len(used))
	// Keys built at run time: job states, view titles, sign-in notices.
	used = append(used, "state.queued", "state.admitted", "state.direct", "state.stopped", "signin.expired",
		"job.released.audited", "job.released.unaudited",
		"overview.title", "queue.title", "tenant.title", "tenants.title", "job.title", "signin.title", "err.title")
	for _, v := range (&Console{}).viewTable() {
		if v.Nav != "" {
			used = append(used, v.Nav)
		}
	}
	sort.Strings(used)
	for _, k := range used {
		_, ok := catalogue[k]
		must.True(t, ok, must.Sprintf("label %q is used but not in the catalogue", k))
	}
}

func TestAcceptLanguage(t *testing.T) {
	cases := map[string]string{
		"":                            LangEN,
		"zh-CN,zh;q=0.9,en;q=0.8":     LangZH,
		"en-US,en;q=0.9,zh-CN;q=0.8":  LangEN,
		"fr, zh-Hans;q=0.7, en;q=0.3": LangZH,
		"de, fr;q=0.5":                LangEN,
		"zh;q=0, en":                  LangEN,
	}
	for h, want := range cases {
		t.Run(h, func(t *testing.T) { must.Eq(t, want, fromAcceptLanguage(h)) })
	}
}

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessions(time.Hour, 3, func() time.Time { return now })
	a, err := s.create("a")
	must.NoError(t, err)
	b, _ := s.create("b")
	must.NotEq(t, a.ID, b.ID)
	must.NotEq(t, a.CSRF, b.CSRF)
	must.Eq(t, a, s.get(a.ID)) // a is now the most recently used
	_, _ = s.create("c")
	_, _ = s.create("d") // full: b, the least recently used, goes
	must.Eq(t, 3, s.len())
	must.Nil(t, s.get(b.ID))
	must.NotNil(t, s.get(a.ID))
	now = now.Add(time.Hour)
	must.Nil(t, s.get(a.ID), must.Sprint("expired at its absolute lifetime"))
	must.Eq(t, 2, s.len())
	s.remove("nothing")
	must.Nil(t, s.get(""))
}

// TestJavaScriptBudget: all JavaScript the console serves stays within
// 60 KB gzipped (issue 18).
func TestJavaScriptBudget(t *testing.T) {
	total := 0
	err := fs.WalkDir(assets, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		b, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		must.NoError(t, zw.Close())
		t.Logf("%s: %d bytes, %d gzipped", path, len(b), buf.Len())
		total += buf.Len()
		return nil
	})
	must.NoError(t, err)
	must.Greater(t, 0, total)
	must.Less(t, 60*1024, total)
}

// TestContrast: the text colours of console.css against the backgrounds
// they are used on keep WCAG AA contrast (≥ 4.5:1).
func TestContrast(t *testing.T) {
	css, err := fs.ReadFile(assets, "static/console.css")
	must.NoError(t, err)
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z]+):(#[0-9a-f]{6})`).FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = m[2]
	}
	pairs := [][2]string{{"fg", "bg"}, {"fg", "panel"}, {"muted", "bg"}, {"muted", "panel"}, {"link", "bg"}, {"link", "panel"},
		{"navfg", "nav"}, {"warnfg", "warnbg"}, {"ok", "bg"}, {"bad", "bg"}}
	for _, p := range pairs {
		fg, bg := vars[p[0]], vars[p[1]]
		must.NotEq(t, "", fg, must.Sprintf("--%s not in console.css", p[0]))
		must.NotEq(t, "", bg, must.Sprintf("--%s not in console.css", p[1]))
		must.GreaterEq(t, 4.5, contrast(fg, bg), must.Sprintf("%s on %s", p[0], p[1]))
	}
	must.GreaterEq(t, 4.5, contrast(vars["bad"], "#fdecec"), must.Sprint(".error"))
}

// contrast is the WCAG 2 contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func luminance(hex string) float64 {
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		c := float64(v) / 255
		if c <= 0.03928 {
			rgb[i] = c / 12.92
		} else {
			rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
}
