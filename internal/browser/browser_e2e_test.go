//go:build e2e

package browser

import (
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// testSite serves the pages the harness is tested against, on loopback.
func testSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>ok</title><link rel="icon" href="data:,"></head><body style="background:#fff;color:#111">
<h1 id="title">Hello</h1>
<table id="t"><thead><tr><th>Name</th><th>Count</th></tr></thead>
<tbody><tr><td> a </td><td>1</td></tr><tr><td>b</td><td>2</td></tr></tbody></table>
<form id="f" method="post" action="/posted"><label for="who">Who</label><input id="who" name="who"><button>Send</button></form>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="dot">
</body></html>`)
	})
	mux.HandleFunc("/posted", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprintf(w, `<!doctype html><html><head><link rel="icon" href="data:,"></head><body><p id="who">%s</p></body></html>`, r.FormValue("who"))
	})
	mux.HandleFunc("/forbidden", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<!doctype html><html><head><link rel="icon" href="data:,"></head><body>no</body></html>`)
	})
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<script>console.error("boom from console"); console.log("not an error"); undefinedFunction();</script>
<img src="/missing.png" alt="missing"></body></html>`)
	})
	mux.HandleFunc("/inaccessible", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><link rel="icon" href="data:,"></head><body style="background:#fff">
<p style="color:#aaa">faint</p><p style="color:#000">fine</p>
<input name="nolabel"><label>wrapped <input name="wrapped"></label><input type="hidden" name="h">
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<svg role="img" width="10" height="10"></svg></body></html>`)
	})
	mux.HandleFunc("/wide", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><meta name="viewport" content="width=device-width"><link rel="icon" href="data:,"></head><body><div style="width:900px">wide</div></body></html>`)
	})
	mux.HandleFunc("/offsite", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<script>fetch("http://example.com/").then(() => document.body.dataset.reached = "yes", () => document.body.dataset.reached = "no");</script></body></html>`)
	})
	srv := httptest.NewServer(mux) // binds 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

// TestE2E_Browser drives every helper against a loopback site with one
// browser, as the console tests do.
func TestE2E_Browser(t *testing.T) {
	srv := testSite(t)
	b := New(t, Options{})
	profile := b.profile
	must.DirExists(t, profile)

	t.Run("navigate, text, table", func(t *testing.T) {
		status, err := b.Navigate(srv.URL + "/ok")
		must.NoError(t, err)
		must.Eq(t, 200, status)
		title, err := b.Text("#title")
		must.NoError(t, err)
		must.Eq(t, "Hello", title)
		_, err = b.Text("#absent")
		must.Error(t, err)
		rows, err := b.Table("#t")
		must.NoError(t, err)
		must.Eq(t, [][]string{{"a", "1"}, {"b", "2"}}, rows)
		head, err := b.Headers("#t")
		must.NoError(t, err)
		must.Eq(t, []string{"Name", "Count"}, head)
		lang, err := b.Attr("html", "lang")
		must.NoError(t, err)
		must.Eq(t, "en", lang)
		must.SliceEmpty(t, b.Errors())
	})
	t.Run("submit a form", func(t *testing.T) {
		_, err := b.Navigate(srv.URL + "/ok")
		must.NoError(t, err)
		status, err := b.Submit("#f", map[string]string{"who": "zoë & co"})
		must.NoError(t, err)
		must.Eq(t, 200, status)
		got, err := b.Text("#who")
		must.NoError(t, err)
		must.Eq(t, "zoë & co", got)
		loc, err := b.Location()
		must.NoError(t, err)
		must.StrHasSuffix(t, "/posted", loc)
	})
	t.Run("fetch from the page", func(t *testing.T) {
		_, err := b.Navigate(srv.URL + "/ok")
		must.NoError(t, err)
		status, body, err := b.Fetch("/forbidden")
		must.NoError(t, err)
		must.Eq(t, 403, status)
		must.StrContains(t, body, "no")
	})
	t.Run("status of an error page", func(t *testing.T) {
		status, err := b.Navigate(srv.URL + "/forbidden")
		must.NoError(t, err)
		must.Eq(t, 403, status)
	})
	t.Run("console errors, exceptions and failed loads are collected", func(t *testing.T) {
		b.ClearErrors()
		_, err := b.Navigate(srv.URL + "/broken")
		must.NoError(t, err)
		var errs []string
		must.Wait(t, waitFor(func() bool { errs = b.Errors(); return len(errs) >= 3 }),
			must.Sprintf("errors seen: %q", b.Errors()))
		joined := strings.Join(errs, "\n")
		must.StrContains(t, joined, "boom from console")
		must.StrContains(t, joined, "undefinedFunction")
		must.StrContains(t, joined, "missing.png")
		must.StrNotContains(t, joined, "not an error")
		b.ClearErrors()
		must.SliceEmpty(t, b.Errors())
	})
	t.Run("accessibility findings", func(t *testing.T) {
		_, err := b.Navigate(srv.URL + "/ok")
		must.NoError(t, err)
		ps, err := b.Accessibility()
		must.NoError(t, err)
		must.SliceEmpty(t, ps)

		_, err = b.Navigate(srv.URL + "/inaccessible")
		must.NoError(t, err)
		ps, err = b.Accessibility()
		must.NoError(t, err)
		var kinds []string
		for _, p := range ps {
			kinds = append(kinds, p.Kind+" "+p.Element)
		}
		must.SliceContainsAll(t, kinds, []string{
			`contrast p "faint"`, "label input[name=nolabel]", "alt img", "alt svg",
		}, must.Sprintf("problems: %v", ps))
		must.Len(t, 4, ps, must.Sprintf("problems: %v", ps))
	})
	t.Run("phone viewport and horizontal overflow", func(t *testing.T) {
		must.NoError(t, b.SetViewport(390, 844, true))
		_, err := b.Navigate(srv.URL + "/wide")
		must.NoError(t, err)
		over, err := b.HorizontalOverflow()
		must.NoError(t, err)
		must.Greater(t, 400, over)
		_, err = b.Navigate(srv.URL + "/ok")
		must.NoError(t, err)
		over, err = b.HorizontalOverflow()
		must.NoError(t, err)
		must.Zero(t, over)
		must.NoError(t, b.SetViewport(1280, 900, false))
	})
	t.Run("screenshot is a PNG", func(t *testing.T) {
		_, err := b.Navigate(srv.URL + "/ok")
		must.NoError(t, err)
		path := filepath.Join(t.TempDir(), "shots", "ok.png")
		must.NoError(t, b.Screenshot(path))
		f, err := os.Open(path)
		must.NoError(t, err)
		defer f.Close()
		img, err := png.Decode(f)
		must.NoError(t, err)
		must.Eq(t, 1280, img.Bounds().Dx())
	})
	t.Run("nothing off loopback is reached", func(t *testing.T) {
		_, err := b.Navigate(srv.URL + "/offsite")
		must.NoError(t, err)
		var reached string
		must.Wait(t, waitFor(func() bool {
			return b.Eval(`document.body.dataset.reached || ""`, &reached) == nil && reached != ""
		}))
		must.Eq(t, "no", reached)
	})
	pgid := b.cmd.Process.Pid
	must.True(t, groupAlive(pgid))
	b.Close()
	must.False(t, groupAlive(pgid), must.Sprint("a browser process outlived Close"))
	must.DirNotExists(t, profile)
}

// TestE2E_BrowserMissing: a missing browser is an error that says how to
// install one, never a pass.
func TestE2E_BrowserMissing(t *testing.T) {
	t.Setenv(EnvChromium, filepath.Join(t.TempDir(), "no-chromium"))
	_, err := Start(Options{})
	must.ErrorIs(t, err, ErrNotFound)
	must.StrContains(t, err.Error(), "apt-get install -y chromium")
}
