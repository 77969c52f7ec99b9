package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Navigate loads url, waits for the page to load and returns the HTTP
// status of the main document.
func (b *Browser) Navigate(url string) (int, error) {
	return b.navigation(fmt.Sprintf("navigating to %s", url), chromedp.Navigate(url))
}

// navigation runs actions that load a new document and returns its status.
func (b *Browser) navigation(what string, actions ...chromedp.Action) (int, error) {
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if resp == nil {
		return 0, fmt.Errorf("%s: no response", what)
	}
	return int(resp.Status), nil
}

// Location returns the current page's URL.
func (b *Browser) Location() (string, error) {
	var u string
	err := b.run(chromedp.Location(&u))
	return u, err
}

// Eval evaluates a JavaScript expression and decodes its (JSON) value into
// out.
func (b *Browser) Eval(expr string, out any) error {
	if err := b.run(chromedp.Evaluate(expr, out)); err != nil {
		return fmt.Errorf("evaluating %q: %w", expr, err)
	}
	return nil
}

// Fetch GETs url from the current page with the page's cookies (as a link
// the user follows would) and returns the status and body.
func (b *Browser) Fetch(url string) (int, string, error) {
	var out struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	expr := fmt.Sprintf(`fetch(%s, {credentials: "same-origin"}).then(async r => ({status: r.status, body: await r.text()}))`, quote(url))
	await := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
	if err := b.run(chromedp.Evaluate(expr, &out, await)); err != nil {
		return 0, "", fmt.Errorf("fetching %s: %w", url, err)
	}
	return out.Status, out.Body, nil
}

// Text returns the visible text of the first element matching the CSS
// selector, or an error when none matches.
func (b *Browser) Text(selector string) (string, error) {
	var s *string
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.innerText : null })()`, quote(selector))
	if err := b.Eval(expr, &s); err != nil {
		return "", err
	}
	if s == nil {
		return "", fmt.Errorf("no element matches %q", selector)
	}
	return *s, nil
}

// Count returns how many elements match the CSS selector.
func (b *Browser) Count(selector string) (int, error) {
	var n int
	err := b.Eval(fmt.Sprintf(`document.querySelectorAll(%s).length`, quote(selector)), &n)
	return n, err
}

// Attr returns an attribute of the first element matching the selector
// ("" when the element lacks it, an error when nothing matches).
func (b *Browser) Attr(selector, name string) (string, error) {
	var s *string
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? (e.getAttribute(%s) || "") : null })()`, quote(selector), quote(name))
	if err := b.Eval(expr, &s); err != nil {
		return "", err
	}
	if s == nil {
		return "", fmt.Errorf("no element matches %q", selector)
	}
	return *s, nil
}

// Table reads the body rows of the first table matching the selector: one
// []string per row that has <td> cells, each cell's trimmed visible text.
func (b *Browser) Table(selector string) ([][]string, error) {
	var rows [][]string
	expr := fmt.Sprintf(`(() => {
		const t = document.querySelector(%s);
		if (!t) return null;
		return Array.from(t.querySelectorAll("tr"))
			.filter(r => r.querySelector("td"))
			.map(r => Array.from(r.cells).map(c => c.innerText.trim()));
	})()`, quote(selector))
	var raw json.RawMessage
	if err := b.Eval(expr, &raw); err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return nil, fmt.Errorf("no table matches %q", selector)
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("decoding table %q: %w", selector, err)
	}
	return rows, nil
}

// Headers returns the header cells (<th>) of the first table matching the
// selector.
func (b *Browser) Headers(selector string) ([]string, error) {
	var h []string
	expr := fmt.Sprintf(`Array.from(document.querySelectorAll(%s + " thead th")).map(c => c.innerText.trim())`, quote(selector))
	err := b.Eval(expr, &h)
	return h, err
}

// SetValue sets the value of a form field (input, select or textarea)
// matching the selector, replacing what it held.
func (b *Browser) SetValue(selector, value string) error {
	if err := b.run(chromedp.SetValue(selector, value, chromedp.ByQuery)); err != nil {
		return fmt.Errorf("setting %q: %w", selector, err)
	}
	return nil
}

// Submit fills the fields of the form matching formSelector (field name →
// value, by the controls' name attribute), submits it as a user would
// (requestSubmit, so validation and submit handlers run) and waits for the
// resulting document, returning its HTTP status.
func (b *Browser) Submit(formSelector string, fields map[string]string) (int, error) {
	for name, value := range fields {
		sel := fmt.Sprintf(`%s [name=%q]`, formSelector, name)
		if err := b.SetValue(sel, value); err != nil {
			return 0, err
		}
	}
	submit := chromedp.ActionFunc(func(ctx context.Context) error {
		var found bool
		expr := fmt.Sprintf(`(() => { const f = document.querySelector(%s); if (!f) return false; f.requestSubmit(); return true })()`, quote(formSelector))
		if err := chromedp.Evaluate(expr, &found).Do(ctx); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("no form matches %q", formSelector)
		}
		return nil
	})
	return b.navigation(fmt.Sprintf("submitting %q", formSelector), submit)
}

// SetViewport resizes the page's viewport (CSS pixels); mobile sets a
// phone's device metrics (touch, device scale 3).
func (b *Browser) SetViewport(width, height int, mobile bool) error {
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	return b.run(chromedp.EmulateViewport(int64(width), int64(height), opts...))
}

// HorizontalOverflow returns by how many CSS pixels the page is wider than
// its viewport (0 when nothing scrolls sideways).
func (b *Browser) HorizontalOverflow() (int, error) {
	var n int
	err := b.Eval(`Math.max(0, document.documentElement.scrollWidth - document.documentElement.clientWidth)`, &n)
	return n, err
}

// Screenshot saves a PNG of the whole page (beyond the viewport) to path,
// creating its directory.
func (b *Browser) Screenshot(path string) error {
	var png []byte
	if err := b.run(chromedp.FullScreenshot(&png, 100)); err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("screenshot directory: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("writing screenshot: %w", err)
	}
	return nil
}

// Cookies returns the browser's cookies for the current page.
func (b *Browser) Cookies() ([]*network.Cookie, error) {
	var cs []*network.Cookie
	err := b.run(chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cs, err = network.GetCookies().Do(ctx)
		return err
	}))
	return cs, err
}

// quote renders s as a JavaScript string literal.
func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
