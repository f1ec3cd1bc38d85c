// Package console is srtd's web console (issue 21): the page, its script
// and styles and the vendored xterm.js (all embedded, nothing fetched at
// run time), and its login.
//
// Login works as Jupyter's: srtd prints one URL carrying a login token
// (LoginURL); visiting it trades the token for a session cookie and
// redirects to the token-less page. The page then calls the API with that
// cookie (Authorizes). The login token is not the API's bearer token: it
// lives in memory only, and a console session is a cookie of its own
// (SECURITY.md, "Web console").
//
// The package serves /console/ only; the caller (package server) runs
// its Host and Origin checks before it, and answers everything else.
package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under; Owns tells which
// requests are its own.
const Prefix = "/console/"

// CookiePrefix begins every session cookie's name; Console.CookieName
// is it with srtd's port. Cookies ignore ports: two srtd on one host
// share one cookie jar, and a name of their own keeps one login from
// overwriting the other's.
const CookiePrefix = "srtd_console_"

// MaxSessions bounds the console sessions (logins) kept at once; a login
// past it ends the oldest.
const MaxSessions = 32

// CSP is the Content-Security-Policy of every console response: scripts,
// styles, connections and images from srtd itself only, no inline script
// or style, no <base>, no framing, forms posting to srtd only.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Console is the web console of one srtd: its login token and the
// sessions logged in with it. Create it with New.
type Console struct {
	token  string
	cookie string // the session cookie's name
	// off, when set, is why the console is off (Disabled): it serves
	// only that reason and authorizes nothing.
	off    string
	static http.Handler

	mu sync.Mutex
	// sessions holds the SHA-256 of each live session cookie, oldest
	// first in order. A lookup by hash leaks nothing of the cookie by
	// its timing.
	sessions map[[32]byte]struct{}
	order    [][32]byte
}

// New returns the Console of an srtd listening on port, with a fresh
// 256-bit login token; its session cookie is named CookiePrefix+port.
//
// Only serve it where the API's connections are limited to srtd's own
// user (srtd's peer-uid check on a loopback-only listener): a browser
// sends the cookie to every port of the host, and anything that holds
// it can replay it with the fetch-metadata headers a browser would send
// (SECURITY.md, "srtd web console"). Elsewhere serve Disabled.
func New(port int) *Console {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &Console{token: randomHex(32), cookie: fmt.Sprintf("%s%d", CookiePrefix, port), static: http.FileServerFS(sub), sessions: map[[32]byte]struct{}{}}
}

// Disabled returns a console that is off: every /console/ request is
// answered 404 with why (reason, one sentence), and no cookie
// authorizes anything.
func Disabled(reason string) *Console {
	return &Console{off: reason, sessions: map[[32]byte]struct{}{}}
}

// Off is why the console is off (Disabled), or empty when it is on.
func (c *Console) Off() string { return c.off }

// CookieName is the name of the console's session cookie.
func (c *Console) CookieName() string { return c.cookie }

// LoginURL is the one URL srtd prints at start: the console on addr (the
// listening address, host:port) with the login token. A listener on
// every interface is reached as 127.0.0.1 (or [::1]): srtd answers only
// loopback Host names.
func (c *Console) LoginURL(addr string) string {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		host, p = addr, ""
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		if ip != nil && ip.To4() == nil {
			host = "::1"
		} else {
			host = "127.0.0.1"
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, p), Path: Prefix, RawQuery: url.Values{"token": {c.token}}.Encode()}
	return u.String()
}

// Owns reports whether the request is the console's: /console and
// everything under /console/.
func Owns(r *http.Request) bool {
	return r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, Prefix)
}

// Authorizes reports whether r is an API call of a logged-in console
// page: it carries a live session cookie, and the browser says it comes
// from this very origin — an Origin header (which the server has already
// held to its own loopback origin) or Sec-Fetch-Site: same-origin. A page
// of another port of the same host is the same site, so SameSite=Strict
// lets the cookie go with its requests; the browser's fetch metadata
// does not lie for it, and such a request is not authorized.
//
// Any one of the cookies of that name may be the live session: a page
// of another port may plant ("toss") cookies of the same name with a
// longer path, which the browser sends first.
func (c *Console) Authorizes(r *http.Request) bool {
	if c.off != "" {
		return false
	}
	if r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		return false
	}
	return c.loggedIn(r)
}

// loggedIn reports whether any cookie of the console's name is a live
// session (see Authorizes).
func (c *Console) loggedIn(r *http.Request) bool {
	return len(c.liveSessions(r)) > 0
}

// liveSessions returns the hashes of r's cookies of the console's name
// that are live sessions.
func (c *Console) liveSessions(r *http.Request) [][32]byte {
	var live [][32]byte
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ck := range r.CookiesNamed(c.cookie) {
		if ck.Value == "" {
			continue
		}
		h := sha256.Sum256([]byte(ck.Value))
		if _, ok := c.sessions[h]; ok {
			live = append(live, h)
		}
	}
	return live
}

// ServeHTTP serves the console: GET /console/?token=… logs in (cookie,
// then 303 to /console/) or answers 401 with the login-required page;
// GET /console/ is the page when logged in, else that 401; POST
// /console/logout ends the session; other paths are the embedded
// assets (code only: no data is ever in them). Every answer carries the
// CSP and the headers of secureHeaders.
//
// A Disabled console answers every request 404 with its reason.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w.Header())
	if c.off != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "The srtd web console is off: %s\nThe API (bearer token) is served as usual.\n", c.off)
		return
	}
	switch {
	case r.URL.Path == "/console":
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	case r.URL.Path == Prefix+"logout":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		c.logout(w, r)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case r.URL.Path == Prefix || r.URL.Path == Prefix+"index.html":
		c.page(w, r)
	case r.URL.Path == Prefix+"login.html", strings.HasSuffix(r.URL.Path, "/"):
		http.NotFound(w, r) // the 401 body only; no directory listings
	default:
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, Prefix)
		c.static.ServeHTTP(w, r2)
	}
}

// page is GET /console/: login with ?token=, the page with a session,
// else the login-required page (401).
func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); q.Has("token") {
		if subtle.ConstantTimeCompare([]byte(q.Get("token")), []byte(c.token)) != 1 {
			c.loginRequired(w)
			return
		}
		http.SetCookie(w, &http.Cookie{
			Name:  c.cookie,
			Value: c.newSession(),
			Path:  "/",
			// Secure is impossible: the console is plain http on
			// loopback. HttpOnly keeps it from any script; Strict from
			// any other site's request.
			HttpOnly: true,
			SameSite: http.SameSiteStrictMode,
		})
		// Right away to the token-less URL: the token never stays in
		// the address bar, nor in any Referer (also no-referrer).
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	if !c.loggedIn(r) {
		c.loginRequired(w)
		return
	}
	serveAsset(w, "assets/index.html", http.StatusOK)
}

// loginRequired answers 401 with the login-required page: it holds no
// data, only how to log in.
func (c *Console) loginRequired(w http.ResponseWriter) {
	serveAsset(w, "assets/login.html", http.StatusUnauthorized)
}

func serveAsset(w http.ResponseWriter, name string, status int) {
	b, err := assets.ReadFile(name)
	if err != nil {
		http.Error(w, "missing asset", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	for _, h := range c.liveSessions(r) {
		c.mu.Lock()
		delete(c.sessions, h)
		c.order = slices.DeleteFunc(c.order, func(x [32]byte) bool { return x == h })
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: c.cookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// newSession returns a fresh session cookie value and keeps its hash,
// dropping the oldest sessions past MaxSessions.
func (c *Console) newSession() string {
	v := randomHex(32)
	h := sha256.Sum256([]byte(v))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions[h] = struct{}{}
	c.order = append(c.order, h)
	for len(c.order) > MaxSessions {
		delete(c.sessions, c.order[0])
		c.order = c.order[1:]
	}
	return v
}

// secureHeaders sets the headers of every console answer: the CSP, no
// MIME sniffing, no framing, no Referer (the login URL's token must not
// leak through one), no caching, and no use of the answers by pages of
// other origins (CORP, COOP).
func secureHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
