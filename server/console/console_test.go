package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func serve(t *testing.T, c *Console, method, target string, cookie *http.Cookie) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	if cookie != nil {
		r.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// login follows the printed URL and returns the session cookie.
func login(t *testing.T, c *Console) *http.Cookie {
	t.Helper()
	u, err := url.Parse(c.LoginURL("127.0.0.1:7777"))
	if err != nil {
		t.Fatal(err)
	}
	resp := serve(t, c, "GET", u.RequestURI(), nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix {
		t.Fatalf("login: %d Location %q; want 303 to %s", resp.StatusCode, resp.Header.Get("Location"), Prefix)
	}
	cs := resp.Cookies()
	if len(cs) != 1 || cs[0].Name != "srtd_console_7777" {
		t.Fatalf("login cookies %v; want one srtd_console_7777", cs)
	}
	return cs[0]
}

func TestLoginURL(t *testing.T) {
	c := New(7777)
	for addr, want := range map[string]string{
		"127.0.0.1:7777": "http://127.0.0.1:7777/console/?token=",
		"[::1]:7777":     "http://[::1]:7777/console/?token=",
		"0.0.0.0:7777":   "http://127.0.0.1:7777/console/?token=",
		"[::]:7777":      "http://[::1]:7777/console/?token=",
	} {
		got := c.LoginURL(addr)
		if !strings.HasPrefix(got, want) || len(got) != len(want)+64 || !strings.HasSuffix(got, c.token) {
			t.Errorf("LoginURL(%s) = %q; want %s + the 64-digit token", addr, got, want)
		}
	}
	if New(7777).token == c.token {
		t.Error("two consoles share a login token")
	}
	if New(7778).CookieName() == c.CookieName() {
		t.Error("srtd on two ports share a cookie name: one's login overwrites the other's")
	}
}

// TestLoginCookie: the cookie is HttpOnly, SameSite=Strict, Path=/ and
// (plain http on loopback) not Secure; the redirect drops the token; the
// token appears in no header of the answer.
func TestLoginCookie(t *testing.T) {
	c := New(7777)
	u, _ := url.Parse(c.LoginURL("127.0.0.1:7777"))
	resp := serve(t, c, "GET", u.RequestURI(), nil)
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure || ck.MaxAge != 0 {
		t.Errorf("cookie %+v; want HttpOnly, SameSite=Strict, Path=/, a session cookie", ck)
	}
	if ck.Value == c.token || len(ck.Value) != 64 {
		t.Errorf("cookie value %q: want a fresh 256-bit session id, not the login token", ck.Value)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			if strings.Contains(v, c.token) {
				t.Errorf("header %s carries the login token: %q", k, v)
			}
		}
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Referrer-Policy %q", resp.Header.Get("Referrer-Policy"))
	}
	// A second login (another browser) is another session; both live.
	ck2 := login(t, c)
	for _, k := range []*http.Cookie{ck, ck2} {
		if resp := serve(t, c, "GET", Prefix, k); resp.StatusCode != 200 || !strings.Contains(body(t, resp), `src="app.js"`) {
			t.Errorf("page with cookie: %d; want the console", resp.StatusCode)
		}
	}
}

// TestLoginRequired: without the token or a live cookie, the login page
// with 401, and nothing else.
func TestLoginRequired(t *testing.T) {
	c := New(7777)
	for name, tc := range map[string]struct {
		target string
		cookie *http.Cookie
	}{
		"no-token":        {Prefix, nil},
		"index":           {Prefix + "index.html", nil},
		"bad-token":       {Prefix + "?token=" + strings.Repeat("0", 64), nil},
		"empty-token":     {Prefix + "?token=", nil},
		"forged-cookie":   {Prefix, &http.Cookie{Name: c.CookieName(), Value: strings.Repeat("a", 64)}},
		"token-as-cookie": {Prefix, &http.Cookie{Name: c.CookieName(), Value: c.token}},
	} {
		t.Run(name, func(t *testing.T) {
			resp := serve(t, c, "GET", tc.target, tc.cookie)
			b := body(t, resp)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b, `id="login-required"`) || strings.Contains(b, "app.js") {
				t.Errorf("%d %q; want 401 and the login-required page", resp.StatusCode, b)
			}
			if len(resp.Cookies()) != 0 {
				t.Errorf("cookies set: %v", resp.Cookies())
			}
		})
	}
}

// TestHeaders: every console answer carries the CSP and its companions.
func TestHeaders(t *testing.T) {
	c := New(7777)
	ck := login(t, c)
	for _, target := range []string{Prefix, Prefix + "?token=x", Prefix + "app.js", Prefix + "style.css", Prefix + "vendor/xterm/xterm.js", Prefix + "vendor/", Prefix + "nope", "/console"} {
		resp := serve(t, c, "GET", target, ck)
		h := resp.Header
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", target, h)
		}
	}
	if !strings.Contains(CSP, "script-src 'self';") || strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP %q", CSP)
	}
	if resp := serve(t, c, "GET", Prefix+"app.js", nil); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, target := range []string{Prefix + "vendor/", Prefix + "login.html"} {
		if resp := serve(t, c, "GET", target, ck); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d; want 404", target, resp.StatusCode)
		}
	}
	if resp := serve(t, c, "POST", Prefix, ck); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d; want 405", Prefix, resp.StatusCode)
	}
}

// TestAuthorizes: an API call is the console's only with a live cookie
// and the browser's word that it is same-origin.
func TestAuthorizes(t *testing.T) {
	c := New(7777)
	ck := login(t, c)
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
		hdr    map[string]string
		want   bool
	}{
		{"fetch", ck, map[string]string{"Sec-Fetch-Site": "same-origin"}, true},
		{"post-or-websocket", ck, map[string]string{"Origin": "http://127.0.0.1:7777"}, true},
		{"no-fetch-metadata", ck, nil, false},
		{"other-port-same-site", ck, map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"typed-in-address-bar", ck, map[string]string{"Sec-Fetch-Site": "none"}, false},
		{"no-cookie", nil, map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"forged-cookie", &http.Cookie{Name: c.CookieName(), Value: "x"}, map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"login-token-as-cookie", &http.Cookie{Name: c.CookieName(), Value: c.token}, map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
	} {
		r := httptest.NewRequest("GET", "/v1/sandboxes", nil)
		if tc.cookie != nil {
			r.AddCookie(tc.cookie)
		}
		for k, v := range tc.hdr {
			r.Header.Set(k, v)
		}
		if got := c.Authorizes(r); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestTossedCookie: a page of another port of the host can plant cookies
// of the console's name with a longer path, which browsers send first;
// any live one among them is the session, and logout ends it.
func TestTossedCookie(t *testing.T) {
	c := New(7777)
	ck := login(t, c)
	r := httptest.NewRequest("GET", "/v1/sandboxes", nil)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Cookie", c.CookieName()+"=bogus; "+c.CookieName()+"="+ck.Value)
	if !c.Authorizes(r) {
		t.Error("a tossed cookie first: the live session behind it is not seen")
	}
	page := httptest.NewRequest("GET", Prefix, nil)
	page.Header = r.Header.Clone()
	w := httptest.NewRecorder()
	c.ServeHTTP(w, page)
	if w.Code != 200 {
		t.Errorf("the page with a tossed cookie first: %d; want 200", w.Code)
	}
	out := httptest.NewRequest("POST", Prefix+"logout", nil)
	out.Header = r.Header.Clone()
	c.ServeHTTP(httptest.NewRecorder(), out)
	if c.loggedIn(withCookie(ck)) {
		t.Error("logout with a tossed cookie first left the session live")
	}
}

// TestDisabled: an off console answers 404 with its reason everywhere
// and authorizes no cookie, not even a session of a console that was on.
func TestDisabled(t *testing.T) {
	on := New(7777)
	ck := login(t, on)
	c := Disabled("no peer-uid check here")
	for _, target := range []string{Prefix, Prefix + "?token=" + on.token, Prefix + "app.js", "/console"} {
		resp := serve(t, c, "GET", target, ck)
		if b := body(t, resp); resp.StatusCode != 404 || !strings.Contains(b, "off: no peer-uid check here") || len(resp.Cookies()) != 0 {
			t.Errorf("GET %s: %d %q %v; want 404 with the reason, no cookie", target, resp.StatusCode, b, resp.Cookies())
		}
	}
	r := withCookie(&http.Cookie{Name: CookiePrefix + "7777", Value: ck.Value})
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	if c.Authorizes(r) || c.Off() == "" || on.Off() != "" {
		t.Error("an off console authorizes a cookie, or Off is wrong")
	}
}

// TestSessionsBounded: past MaxSessions logins the oldest ends; logout
// ends its own.
func TestSessionsBounded(t *testing.T) {
	c := New(7777)
	first := login(t, c)
	var last *http.Cookie
	for range MaxSessions {
		last = login(t, c)
	}
	if c.loggedIn(withCookie(first)) || !c.loggedIn(withCookie(last)) {
		t.Errorf("after %d more logins: first live %v, last live %v; want the first ended", MaxSessions, c.loggedIn(withCookie(first)), c.loggedIn(withCookie(last)))
	}
	resp := serve(t, c, "POST", Prefix+"logout", last)
	if resp.StatusCode != http.StatusSeeOther || c.loggedIn(withCookie(last)) {
		t.Errorf("logout: %d, still live %v", resp.StatusCode, c.loggedIn(withCookie(last)))
	}
	if len(c.sessions) != MaxSessions-1 || len(c.order) != MaxSessions-1 {
		t.Errorf("%d sessions, %d in order; want %d", len(c.sessions), len(c.order), MaxSessions-1)
	}
}

func withCookie(ck *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(ck)
	return r
}
