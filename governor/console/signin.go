package console

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/allot-sh/allot/governor/auth"
)

// Cookie names.
const (
	sessionCookie = "allot_session"
	// preCookie carries the sign-in form's CSRF token before a session
	// exists (login CSRF: nobody may sign a browser in with their token).
	preCookie = "allot_signin"
)

// Req is one request to a view: the session, the caller its token
// resolves to (now, so a revoked token stops working within the auth
// cache's TTL), and the language.
type Req struct {
	R      *http.Request
	S      *Session
	Caller *auth.Caller
	L      Lang
	View   *View
}

// begin finds the request's session and resolves its token. Without one
// it signs the browser in silently when Nomad's ACLs are off, and sends
// it to the sign-in page otherwise. ok is false when it answered.
func (c *Console) begin(w http.ResponseWriter, r *http.Request) (*Req, bool) {
	q := &Req{R: r, L: langOf(r)}
	c.rememberLang(w, r)
	if ck, err := r.Cookie(sessionCookie); err == nil {
		q.S = c.sessions.get(ck.Value)
	}
	if q.S == nil {
		caller, err := c.resolve(r, "")
		if err == nil && caller.ACLsDisabled() {
			s, err := c.sessions.create("")
			if err != nil {
				c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
				return nil, false
			}
			c.setSession(w, r, s)
			q.S, q.Caller = s, caller
			return q, true
		}
		if err != nil && !errors.Is(err, auth.ErrPermissionDenied) {
			c.fail(w, q, auth.Status(err), q.L.T("err.unavailable"))
			return nil, false
		}
		c.toSignin(w, r, "")
		return nil, false
	}
	caller, err := c.resolve(r, q.S.Token)
	switch {
	case errors.Is(err, auth.ErrPermissionDenied):
		c.sessions.remove(q.S.ID)
		c.toSignin(w, r, "signin.expired")
		return nil, false
	case err != nil:
		c.fail(w, q, auth.Status(err), q.L.T("err.unavailable"))
		return nil, false
	}
	q.Caller = caller
	return q, true
}

// resolve authenticates token the way the API does, with r's TLS state
// (a client certificate the governor requires must be the caller's).
func (c *Console) resolve(r *http.Request, token string) (*auth.Caller, error) {
	in, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "/allot/v1/tenants", nil)
	if err != nil {
		return nil, err
	}
	in.TLS, in.RemoteAddr = r.TLS, r.RemoteAddr
	if token != "" {
		in.Header.Set("X-Nomad-Token", token)
	}
	return c.opts.Auth.Authenticate(in)
}

// toSignin redirects a browser to the sign-in page, back here afterwards.
func (c *Console) toSignin(w http.ResponseWriter, r *http.Request, reason string) {
	v := url.Values{"next": {r.URL.RequestURI()}}
	if reason != "" {
		v.Set("why", reason)
	}
	http.Redirect(w, r, Prefix+"signin?"+v.Encode(), http.StatusSeeOther)
}

// signinData is the sign-in page.
type signinData struct {
	Next, Why, Error string
}

// signin shows the form (GET) or checks the token and starts a session
// (POST).
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	q := &Req{R: r, L: langOf(r)}
	c.rememberLang(w, r)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		c.signinForm(w, q, http.StatusOK, "")
	case http.MethodPost:
		c.signinPost(w, q)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (c *Console) signinForm(w http.ResponseWriter, q *Req, status int, errText string) {
	pre, err := randomID()
	if err != nil {
		c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
		return
	}
	http.SetCookie(w, c.cookie(q.R, preCookie, pre, 600))
	why := q.R.URL.Query().Get("why")
	if why != "signin.expired" {
		why = ""
	}
	c.render(w, q, status, "signin", "signin.title", pre, signinData{Next: safeNext(q.R.URL.Query().Get("next")), Why: why, Error: errText})
}

func (c *Console) signinPost(w http.ResponseWriter, q *Req) {
	r := q.R
	ck, err := r.Cookie(preCookie)
	if !sameOrigin(r) || err != nil || !equal(ck.Value, r.PostFormValue("csrf")) {
		c.fail(w, q, http.StatusForbidden, q.L.T("err.csrf"))
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		c.signinForm(w, q, http.StatusBadRequest, q.L.T("signin.empty"))
		return
	}
	// A control character cannot travel in the X-Nomad-Token header:
	// asking Nomad would fail as if Nomad were down (503, a warning).
	if strings.IndexFunc(token, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		c.signinForm(w, q, http.StatusBadRequest, q.L.T("signin.control"))
		return
	}
	caller, err := c.resolve(r, token)
	switch {
	case errors.Is(err, auth.ErrPermissionDenied):
		c.signinForm(w, q, http.StatusForbidden, q.L.T("signin.refused")+": "+auth.Message(err))
		return
	case err != nil:
		c.signinForm(w, q, auth.Status(err), q.L.T("err.unavailable"))
		return
	}
	s, err := c.sessions.create(token)
	if err != nil {
		c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
		return
	}
	if old, err := r.Cookie(sessionCookie); err == nil {
		c.sessions.remove(old.Value) // a new sign-in ends the browser's previous session
	}
	c.opts.Log.Info("console sign-in", "accessor", caller.AccessorID, "name", caller.Name)
	http.SetCookie(w, c.cookie(r, preCookie, "", -1))
	c.setSession(w, r, s)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// signout ends the session (POST with its CSRF token).
func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	q := &Req{R: r, L: langOf(r)}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		q.S = c.sessions.get(ck.Value)
	}
	if q.S == nil {
		http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
		return
	}
	if !c.checkWrite(w, q) {
		return
	}
	c.sessions.remove(q.S.ID)
	http.SetCookie(w, c.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
}

// checkWrite refuses a POST that is cross-origin or lacks the session's
// CSRF token (compared in constant time). ok is false when it answered.
func (c *Console) checkWrite(w http.ResponseWriter, q *Req) bool {
	if !sameOrigin(q.R) || !equal(q.S.CSRF, q.R.PostFormValue("csrf")) {
		c.opts.Log.Warn("console write refused: cross-origin or bad CSRF token", "path", q.R.URL.Path)
		c.fail(w, q, http.StatusForbidden, q.L.T("err.csrf"))
		return false
	}
	return true
}

// sameOrigin refuses requests a browser marks as coming from another
// site: an Origin header naming another host, or Sec-Fetch-Site
// cross-site. A request without either (curl, old browsers) passes; the
// CSRF token still guards it.
func sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host != r.Host {
		return false
	}
	want := "http"
	if r.TLS != nil {
		want = "https"
	}
	return u.Scheme == want || (u.Scheme == "https" && r.Header.Get("X-Forwarded-Proto") == "https")
}

// equal compares two secrets in constant time; empty never matches.
func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// safeNext keeps a redirect target inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

// cookie builds a console cookie: HttpOnly, SameSite=Strict, path /ui/,
// Secure under TLS. maxAge < 0 deletes it.
func (c *Console) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

func (c *Console) setSession(w http.ResponseWriter, r *http.Request, s *Session) {
	http.SetCookie(w, c.cookie(r, sessionCookie, s.ID, int(c.opts.SessionTTL.Seconds())))
}

// rememberLang keeps a ?lang= choice in a cookie.
func (c *Console) rememberLang(w http.ResponseWriter, r *http.Request) {
	if code := known(r.URL.Query().Get("lang")); code != "" {
		ck := c.cookie(r, langCookie, code, 365*24*3600)
		ck.HttpOnly = false
		http.SetCookie(w, ck)
	}
}
