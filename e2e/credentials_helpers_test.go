package e2e

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// credRecord is what a credUpstream received for one path: the
// Authorization header and the body.
type credRecord struct {
	auth, body string
}

// credUpstream is the upstream of the credential tests: it records the
// last Authorization header and body it received for each path, echoes
// both back (as "PATH auth=VALUE" and "PATH body=BODY" lines, the header
// also as X-Echo-Auth) so that a real value reaches the proxy's ingress,
// and serves "/git/" with git http-backend behind Basic auth whose
// password must be gitPassword (401 otherwise; "/git-refused" records the
// last credentials refused).
type credUpstream struct {
	ip, scheme  string
	port        int
	gitPassword string
	mu          sync.Mutex
	seen        map[string]credRecord
}

// base is the upstream's URL without a path.
func (u *credUpstream) base() string {
	return fmt.Sprintf("%s://%s:%d", u.scheme, u.ip, u.port)
}

// got returns what the upstream received for path, and whether it did.
func (u *credUpstream) got(path string) (credRecord, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.seen[path]
	return r, ok
}

// reset forgets every recorded request (between the root and user runs).
func (u *credUpstream) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seen = map[string]credRecord{}
}

// startCredUpstream serves on ip: HTTPS with pki's server leaf, or plain
// HTTP when pki is nil. repoRoot holds the repositories "/git/" serves.
func startCredUpstream(t *testing.T, pki *tlsPKI, ip, repoRoot, gitPassword string) *credUpstream {
	t.Helper()
	u := &credUpstream{ip: ip, scheme: "https", gitPassword: gitPassword, seen: map[string]credRecord{}}
	if pki == nil {
		u.scheme = "http"
	}
	git := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + repoRoot, "GIT_HTTP_EXPORT_ALL=1"}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Path
		if strings.HasPrefix(key, "/git/") {
			// One record for the whole clone: the authenticated requests.
			if _, pw, ok := r.BasicAuth(); !ok || pw != u.gitPassword {
				w.Header().Set("WWW-Authenticate", `Basic realm="srt-e2e"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				if a := r.Header.Get("Authorization"); a != "" {
					u.mu.Lock()
					u.seen["/git-refused"] = credRecord{auth: a}
					u.mu.Unlock()
				}
				return
			}
			u.mu.Lock()
			u.seen["/git"] = credRecord{auth: r.Header.Get("Authorization")}
			u.mu.Unlock()
			git.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		auth := r.Header.Get("Authorization")
		u.mu.Lock()
		u.seen[key] = credRecord{auth: auth, body: string(body)}
		u.mu.Unlock()
		w.Header().Set("X-Echo-Auth", auth)
		fmt.Fprintf(w, "%s auth=%s\n", key, auth)
		if len(body) > 0 {
			fmt.Fprintf(w, "%s body=%s\n", key, body)
		}
	})
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listening on %s: %v", ip, err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	if pki != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	u.port = portOf(t, ln.Addr())
	return u
}

// randomAlnum returns n random characters of [A-Za-z0-9].
func randomAlnum(t *testing.T, n int) string {
	t.Helper()
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = chars[k.Int64()]
	}
	return string(b)
}

// fakeJWT returns an HS256-shaped JSON Web Token with claims as its
// payload and a random signature (nobody verifies it; the sandbox only
// has to see a token that still parses).
func fakeJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	sig := make([]byte, 32)
	rand.Read(sig)
	return enc(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + enc(claims) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// jwtClaims decodes a token's payload, nil when it is not a JWT.
func jwtClaims(tok string) map[string]any {
	seg := strings.Split(tok, ".")
	if len(seg) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(seg[1])
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// leakForms are the spellings of a real value a leak check greps for:
// the value, and its base64 forms at every alignment (a Basic header or
// a base64 blob carrying it), trimmed to their stable middle.
func leakForms(real string) []string {
	forms := []string{real}
	for pad := 0; pad < 3; pad++ {
		// The 4-character groups that encode 3 bytes of real alone: the
		// same wherever real sits in a longer encoding at this alignment.
		start, end := (pad+2)/3*4, (pad+len(real))/3*4
		if end-start < 8 {
			continue
		}
		src := []byte(strings.Repeat("x", pad) + real)
		for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			if f := e.EncodeToString(src)[start:end]; !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	return forms
}

// assertNoLeak fails when any of reals (in any leakForms spelling)
// appears in what was captured; where says what that was.
func assertNoLeak(t *testing.T, where, captured string, reals ...string) {
	t.Helper()
	for _, r := range reals {
		for _, f := range leakForms(r) {
			if strings.Contains(captured, f) {
				i := strings.Index(captured, f)
				lo, hi := max(0, i-200), min(len(captured), i+len(f)+200)
				t.Errorf("%s holds a real value (as %q): ...%s...", where, f, captured[lo:hi])
			}
		}
	}
}

// assertTreeNoLeak fails when a file under dir holds a real value: what
// the sandbox wrote (a clone's config, a log) must hold sentinels only.
func assertTreeNoLeak(t *testing.T, dir string, reals ...string) {
	t.Helper()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4<<20 || filepath.Base(p) == settingsName {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			assertNoLeak(t, "the sandbox-written file "+p, string(b), reals...)
		}
		return nil
	})
}

// lineValue returns the rest of stdout's first line starting with
// prefix, "" when there is none.
func lineValue(stdout, prefix string) string {
	for _, l := range strings.Split(stdout, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}

// credNodeClientSrc is Node's https client over a CONNECT tunnel it opens
// through $HTTPS_PROXY itself (the system Node has no proxy support of
// its own), sending "Authorization: Bearer $TOKEN" and printing the
// answer.
const credNodeClientSrc = `const http = require('http'), https = require('https'), tls = require('tls');
const [host, port, path] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
const req = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: host + ':' + port, headers: {host: host + ':' + port}});
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('node CONNECT', res.statusCode); process.exit(1); }
  https.get({host, port, path, headers: {authorization: 'Bearer ' + process.env.TOKEN},
      createConnection: () => tls.connect({socket, host})}, r => {
    r.setEncoding('utf8'); r.on('data', d => process.stdout.write(d));
  }).on('error', e => { console.log('node client error:', e.message); process.exit(1); });
});
req.on('error', e => { console.log('node proxy error:', e.message); process.exit(1); });
req.end();
`

// credDeadline bounds the whole client script of one run.
const credDeadline = 3 * time.Minute
