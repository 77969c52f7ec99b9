package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// assets are the templates and static files, embedded in the binary.
//
//go:embed templates/*.html static
var assets embed.FS

// layoutFile is the shell every page is rendered into; every other
// templates/<name>.html is a page named <name> that defines "content"
// (and, for htmx refreshes, optionally "partial").
const layoutFile = "templates/layout.html"

// parsePages parses the layout once per page, so each page's "content"
// stays its own.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, layoutFile)
	if err != nil {
		return nil, fmt.Errorf("console: parsing layout: %w", err)
	}
	files, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: listing templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		if f == layoutFile {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(assets, f)
		if err != nil {
			return nil, fmt.Errorf("console: parsing %s: %w", f, err)
		}
		pages[strings.TrimSuffix(path.Base(f), ".html")] = t
	}
	return pages, nil
}

// Page is what the layout renders; Data is the view's own.
type Page struct {
	L        Lang
	Title    string
	Nav      []NavItem
	Identity string
	// ACLsOff shows the banner: Nomad's ACLs are disabled.
	ACLsOff bool
	// CSRF goes into every form as the hidden field "csrf".
	CSRF string
	// LangURL is this page in the other language.
	LangURL  string
	SignedIn bool
	Data     any
}

// NavItem is one entry of the navigation.
type NavItem struct {
	Label, URL string
	Current    bool
}

// render writes page name with data inside the layout. An htmx refresh
// (HX-Request) of a page that defines "partial" gets only that part.
func (c *Console) render(w http.ResponseWriter, q *Req, status int, name, titleKey, csrf string, data any) {
	t, ok := c.pages[name]
	if !ok {
		c.opts.Log.Error("console: no such template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	p := Page{L: q.L, Title: q.L.T(titleKey), CSRF: csrf, LangURL: langURL(q.R, q.L.Other()), Data: data}
	if q.S != nil {
		p.SignedIn, p.CSRF = true, q.S.CSRF
		p.Nav = c.nav(q)
	}
	if q.Caller != nil {
		p.ACLsOff = q.Caller.ACLsDisabled()
		p.Identity = identity(q)
	}
	exec := "layout"
	if q.R.Header.Get("HX-Request") == "true" && t.Lookup("partial") != nil {
		exec = "partial"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, exec, p); err != nil {
		c.opts.Log.Error("console: rendering", "template", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders the error page with status and a message.
func (c *Console) fail(w http.ResponseWriter, q *Req, status int, text string) {
	c.render(w, q, status, "error", "err.title", "", errorData{Status: status, Text: text})
}

type errorData struct {
	Status int
	Text   string
}

// nav lists the views that have a navigation label.
func (c *Console) nav(q *Req) []NavItem {
	var out []NavItem
	for i := range c.views {
		v := &c.views[i]
		if v.Nav == "" {
			continue
		}
		out = append(out, NavItem{Label: q.L.T(v.Nav), URL: Prefix + v.Path, Current: q.View == v})
	}
	return out
}

// identity says who is signed in.
func identity(q *Req) string {
	c := q.Caller
	switch {
	case c.ACLsDisabled():
		return q.L.T("id.nobody")
	case c.Name != "":
		return c.Name
	case c.AccessorID != "":
		return c.AccessorID
	default:
		return q.L.T("id.anonymous")
	}
}

// langURL is r's URL with ?lang= set to l.
func langURL(r *http.Request, l Lang) string {
	v := r.URL.Query()
	v.Set("lang", l.Code)
	u := url.URL{Path: r.URL.Path, RawQuery: v.Encode()}
	return u.String()
}
