package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The TLS termination tests reach their upstreams by IP literal, with no
// name in /etc/hosts: 127.0.0.2 (terminated) and 127.0.0.3 (in
// excludeDomains). Not 127.0.0.1: the sandbox's NO_PROXY names it, so
// clients would go to the sandbox's own loopback, not through the proxy.
const (
	tlsTermIP    = "127.0.0.2"
	tlsExcludeIP = "127.0.0.3"
	// tlsUpstreamCN is the upstreams' own CA, which only the clients of
	// the excluded host (and srt's proxy, through extraCaCertPaths) see.
	tlsUpstreamCN = "srt-e2e tls upstream CA"
)

// tlsPKI is a CA with a server leaf for both upstream addresses and a
// client leaf (for the mTLS upstream), all PEM.
type tlsPKI struct {
	caPEM              []byte
	server             tls.Certificate
	clientPEM, keyPEM  []byte
	pool               *x509.CertPool
	caCertPEM, caKeyPK []byte // the CA itself, for caCertPath/caKeyPath
}

func newTLSPKI(t *testing.T, cn string) *tlsPKI {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, ext x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "srt-e2e leaf"},
			IPAddresses: []net.IP{net.ParseIP(tlsTermIP), net.ParseIP(tlsExcludeIP)},
			NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{ext}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	p := &tlsPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	sder, skey := leaf(2, x509.ExtKeyUsageServerAuth)
	p.server = tls.Certificate{Certificate: [][]byte{sder}, PrivateKey: skey}
	cder, ckey := leaf(3, x509.ExtKeyUsageClientAuth)
	p.clientPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cder})
	ck, _ := x509.MarshalPKCS8PrivateKey(ckey)
	p.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ck})
	cak, _ := x509.MarshalPKCS8PrivateKey(caKey)
	p.caCertPEM, p.caKeyPK = p.caPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: cak})
	return p
}

// tlsUpstream counts the requests it sees per path and whether each came
// with a client certificate (only a client's own TLS, never srt's, has one).
type tlsUpstream struct {
	port int
	mu   sync.Mutex
	seen map[string]int
	mtls map[string]bool
}

func (u *tlsUpstream) count(path string) (int, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[path], u.mtls[path]
}

// startTLSUpstream serves HTTPS on ip with pki's server leaf: "/git/" is
// git http-backend over repoRoot, anything else answers its path. mTLS
// asks for (and verifies, when given) a client certificate.
func startTLSUpstream(t *testing.T, pki *tlsPKI, ip, repoRoot string, mTLS bool) *tlsUpstream {
	t.Helper()
	u := &tlsUpstream{seen: map[string]int{}, mtls: map[string]bool{}}
	git := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + repoRoot, "GIT_HTTP_EXPORT_ALL=1"}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Path
		if strings.HasPrefix(key, "/git/") {
			key = "/git"
		}
		u.mu.Lock()
		u.seen[key]++
		u.mtls[key] = u.mtls[key] || len(r.TLS.PeerCertificates) > 0
		u.mu.Unlock()
		if key == "/git" {
			git.ServeHTTP(w, r)
			return
		}
		fmt.Fprintf(w, "upstream %s saw %s\n", ip, r.URL.Path)
	})
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listening on %s: %v", ip, err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}}
	if mTLS {
		s.TLS.ClientAuth, s.TLS.ClientCAs = tls.VerifyClientCertIfGiven, pki.pool
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	u.port = portOf(t, ln.Addr())
	return u
}

// tlsGoClientSrc is a Go client verifying with Go's system pool, which
// reads SSL_CERT_FILE. It names the proxy itself: ProxyFromEnvironment
// never proxies a loopback address, and the upstreams are on loopback.
const tlsGoClientSrc = `package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

func main() {
	p, _ := url.Parse(os.Getenv("HTTPS_PROXY"))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(p)}}
	r, err := c.Get(os.Args[1])
	if err != nil {
		fmt.Println("go client error:", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(r.Body)
	fmt.Print(string(b))
}
`

// tlsNodeClientSrc is Node's https client over a CONNECT tunnel it opens
// through $HTTPS_PROXY itself, trusting its roots plus
// NODE_EXTRA_CA_CERTS. (The system Node predates NODE_USE_ENV_PROXY;
// TestNetwork covers proxy discovery by Node.)
const tlsNodeClientSrc = `const http = require('http'), https = require('https'), tls = require('tls');
const [host, port, path] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
const req = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: host + ':' + port, headers: {host: host + ':' + port}});
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('node CONNECT', res.statusCode); process.exit(1); }
  https.get({host, port, path, createConnection: () => tls.connect({socket, host})}, r => {
    r.setEncoding('utf8'); r.on('data', d => process.stdout.write(d));
  }).on('error', e => { console.log('node client error:', e.message); process.exit(1); });
});
req.on('error', e => { console.log('node proxy error:', e.message); process.exit(1); });
req.end();
`

// TestTLSTerminate: with network.tlsTerminate, curl, Python (urllib,
// requests), Node, git and a Go client inside the sandbox reach an HTTPS
// upstream through srt's terminating proxy and see a leaf from srt's CA,
// trusting it through the bundle srt points them at; a host in
// excludeDomains is tunnelled opaquely (its own CA, the client's own
// mTLS); bad CA input is one srt: line and exit 125 with nothing run; the
// CA key cannot be read inside.
func TestTLSTerminate(t *testing.T) {
	requireSandbox(t)
	dir, err := os.MkdirTemp(baseDir, "tlsterm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bareRepo(t, dir, "hello over terminated TLS")
	pki := newTLSPKI(t, tlsUpstreamCN)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	upCA := write("upstream-ca.pem", pki.caPEM)
	clientCert, clientKey := write("client.pem", pki.clientPEM), write("client.key", pki.keyPEM)
	nodeJS, goSrc := write("client.js", []byte(tlsNodeClientSrc)), write("goclient.go", []byte(tlsGoClientSrc))
	goBin := filepath.Join(dir, "goclient")
	cmd := exec.Command("go", "build", "-o", goBin, goSrc)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go client: %v\n%s", err, out)
	}
	term := startTLSUpstream(t, pki, tlsTermIP, dir, false)
	excl := startTLSUpstream(t, pki, tlsExcludeIP, dir, true)
	probe := exec.Command("/usr/bin/env", "python3", "-c", "import requests")
	probe.Env = []string{"PATH=" + cleanPATH} // the sandbox's python3, not the caller's
	hasRequests := probe.Run() == nil
	_, nodeErr := exec.LookPath("node")
	// Node's fetch through the proxy variables needs Node >= 22.21
	// (NODE_USE_ENV_PROXY); the npm registry serves one.
	node22, _, node22Err := installNode(t, dir)
	if node22Err != nil {
		t.Logf("no Node 22 from the npm registry, its fetch is not tested: %v", node22Err)
	}

	tp, ep := strconv.Itoa(term.port), strconv.Itoa(excl.port)
	base := "https://" + tlsTermIP + ":" + tp
	settingsWith := func(tlsTerminate string) string {
		return `{"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["` + tlsTermIP + `","` + tlsExcludeIP + `"],"tlsTerminate":` + tlsTerminate + `}}`
	}
	clientSettings := settingsWith(`{"excludeDomains":["` + tlsExcludeIP + `"],"extraCaCertPaths":["` + upCA + `","/nonexistent/ca.pem","` + clientKey + `"]}`)
	// Each client prints what the upstream answered, or its error.
	script := strings.Join([]string{
		"curl -sS --max-time 10 " + base + "/curl",
		`python3 -c "import urllib.request; print(urllib.request.urlopen('` + base + `/urllib', timeout=10).read().decode())"`,
		`if python3 -c 'import requests' 2>/dev/null; then python3 -c "import requests; print(requests.get('` + base + `/requests', timeout=10).text)"; fi`,
		"if command -v node >/dev/null; then node " + nodeJS + " " + tlsTermIP + " " + tp + " /node; fi",
		// fetch, trusting srt's CA through NODE_EXTRA_CA_CERTS as srt set it.
		"if [ -x '" + node22 + "' ]; then '" + node22 + "' -e 'fetch(\"" + base + "/fetch\").then(r => r.text()).then(console.log, e => { console.log(\"fetch error\", e.cause || e); process.exit(1) })'; fi",
		goBin + " " + base + "/go",
		"git clone -q " + base + "/git/repo.git clone && cat clone/README",
		// The leaf the client sees, and the bundle's first certificate
		// (srt's CA): the test compares the two names.
		`echo | openssl s_client -proxy "${HTTPS_PROXY#http://}" -connect ` + tlsTermIP + ":" + tp + ` -verify_return_error -CAfile "$SSL_CERT_FILE" 2>/dev/null | openssl x509 -noout -issuer`,
		`openssl x509 -in "$SSL_CERT_FILE" -noout -subject`,
		// The excluded host: the client's own TLS, the upstream's own CA
		// (trusted through the bundle, extraCaCertPaths), its own mTLS.
		"curl -sS --max-time 10 --cert " + clientCert + " --key " + clientKey + " https://" + tlsExcludeIP + ":" + ep + "/excluded",
		`echo | openssl s_client -proxy "${HTTPS_PROXY#http://}" -connect ` + tlsExcludeIP + ":" + ep + ` -verify_return_error -CAfile "$SSL_CERT_FILE" 2>/dev/null | openssl x509 -noout -issuer | sed 's/^/excluded-/'`,
		`grep -c 'PRIVATE KEY' "$SSL_CERT_FILE" | sed 's/^/key-blocks=/'`,
		`echo "$JAVA_TOOL_OPTIONS"`,
		`echo replaced > "$SSL_CERT_FILE" || echo bundle-read-only`,
	}, "; ")

	forEachUser(t, func(t *testing.T, u *account) {
		t.Run("clients", func(t *testing.T) {
			stdout, stderr, code := sh(t, u, u.workDir(t), clientSettings, script)
			want := []string{"upstream " + tlsTermIP + " saw /curl", "upstream " + tlsTermIP + " saw /urllib",
				"upstream " + tlsTermIP + " saw /go", "hello over terminated TLS",
				"upstream " + tlsExcludeIP + " saw /excluded", "excluded-issuer=CN = " + tlsUpstreamCN,
				"key-blocks=0", "-Djavax.net.ssl.trustStoreType=PKCS12", "bundle-read-only"}
			if hasRequests {
				want = append(want, "upstream "+tlsTermIP+" saw /requests")
			} else {
				t.Log("python3-requests is not installed: the requests client is not tested (scripts/setup.sh installs it)")
			}
			if node22Err == nil {
				want = append(want, "upstream "+tlsTermIP+" saw /fetch")
			}
			if nodeErr == nil {
				want = append(want, "upstream "+tlsTermIP+" saw /node")
			} else {
				t.Log("node is not installed: the Node client is not tested")
			}
			for _, w := range want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", w, code, stdout, stderr)
				}
			}
			// The terminated tunnel's leaf comes from srt's CA (the
			// bundle's first certificate), not the upstream's.
			var issuer, subject string
			for _, l := range strings.Split(stdout, "\n") {
				if v, ok := strings.CutPrefix(l, "issuer="); ok {
					issuer = v
				}
				if v, ok := strings.CutPrefix(l, "subject="); ok {
					subject = v
				}
			}
			if issuer == "" || issuer != subject || strings.Contains(issuer, tlsUpstreamCN) {
				t.Errorf("the terminated leaf's issuer is %q, the bundle's CA %q: want the same, not the upstream's CA\nstdout:\n%s\nstderr:\n%s", issuer, subject, stdout, stderr)
			}
			for _, p := range []string{"/curl", "/urllib", "/go", "/git"} {
				if n, mtls := term.count(p); n == 0 || mtls {
					t.Errorf("the terminated upstream saw %s %d times (client certificate: %v), want >0 from srt's own TLS", p, n, mtls)
				}
			}
			if n, mtls := excl.count("/excluded"); n == 0 || !mtls {
				t.Errorf("the excluded upstream saw /excluded %d times, client certificate %v: want the client's own TLS", n, mtls)
			}
		})
		t.Run("fronting-and-rules", func(t *testing.T) {
			// Inside a terminated tunnel: a Host naming another host, and a
			// TLS server name naming another host, are 421 and violations;
			// network.httpRules judge the decrypted requests (GET allowed,
			// POST refused), where without termination the tunnel is refused.
			st := `{"network":{"allowedDomains":["` + tlsTermIP + `"],"tlsTerminate":{"extraCaCertPaths":["` + upCA + `"]},` +
				`"httpRules":[{"domains":["` + tlsTermIP + `"],"methods":["GET"]}]}}`
			script := strings.Join([]string{
				"curl -sS -o /dev/null -w 'host-mismatch=%{http_code}\\n' --max-time 10 -H 'Host: other.test' " + base + "/front",
				`printf 'GET /sni HTTP/1.1\r\nHost: ` + tlsTermIP + ":" + tp + `\r\nConnection: close\r\n\r\n' | openssl s_client -quiet -proxy "${HTTPS_PROXY#http://}" -connect ` + tlsTermIP + ":" + tp + ` -servername other.test 2>/dev/null | head -1 | sed 's/^/sni-mismatch=/'`,
				"curl -sS -o /dev/null -w 'get=%{http_code}\\n' --max-time 10 " + base + "/rule-get",
				"curl -sS -o /dev/null -w 'post=%{http_code}\\n' --max-time 10 -d x " + base + "/rule-post",
				// A refusal over HTTP/2 keeps the connection: a GOAWAY
				// racing the request's body cuts the answer (curl: (18)).
				"curl -sS -v --http2 --max-time 10 -d x " + base + "/rule-post-body 2>\"$TMPDIR/curl.err\"; grep -c GOAWAY \"$TMPDIR/curl.err\" | sed 's/^/goaway=/'",
			}, "; ")
			stdout, stderr, code := sh(t, u, u.workDir(t), st, script)
			report := fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			for _, w := range []string{"host-mismatch=421", "sni-mismatch=HTTP/1.1 421", "get=200", "post=403",
				"POST /rule-post-body: the method and path match no rule", "goaway=0"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q; %s", w, report)
				}
			}
			for _, w := range []string{"other.test", "POST /rule-post"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks the violation naming %q; %s", w, report)
				}
			}
			if n, _ := term.count("/front"); n != 0 {
				t.Errorf("a fronted request reached the upstream")
			}
			if n, _ := term.count("/rule-post"); n != 0 {
				t.Errorf("a refused POST reached the upstream")
			}
			if n, _ := term.count("/rule-get"); n == 0 {
				t.Errorf("the allowed GET did not reach the upstream; %s", report)
			}
		})
		t.Run("bad-input", func(t *testing.T) {
			d := u.workDir(t)
			other := newTLSPKI(t, "other CA")
			files := map[string][]byte{"ca.pem": pki.caCertPEM, "ca.key": pki.caKeyPK, "other.key": other.caKeyPK, "garbage.pem": []byte("not a PEM file\n")}
			for n, b := range files {
				u.write(t, filepath.Join(d, n), string(b))
			}
			// Errors found when the policy compiles point at the key's value,
			// like the parser's: caCertPath's value is at 4:19, caKeyPath's
			// at 5:18 of this file.
			pair := func(cert, key string) string {
				return "{\"filesystem\":{\"allowWrite\":[\".\"]},\n \"network\":{\"allowedDomains\":[\"" + tlsTermIP + "\"],\n  \"tlsTerminate\":{\n" +
					"    \"caCertPath\": \"" + d + "/" + cert + "\",\n    \"caKeyPath\": \"" + d + "/" + key + "\"}}}\n"
			}
			file := filepath.Join(d, settingsName)
			certAt, keyAt := file+":4:19: network.tlsTerminate.caCertPath: ", file+":5:18: network.tlsTerminate.caKeyPath: "
			for _, tc := range []struct{ name, settings, want string }{
				{"unreadable-cert", pair("missing.pem", "ca.key"), certAt + "open " + d + "/missing.pem: no such file or directory"},
				{"unreadable-key", pair("ca.pem", "missing.key"), keyAt + "open " + d + "/missing.key: no such file or directory"},
				{"mismatched-key", pair("ca.pem", "other.key"), keyAt + d + "/other.key: the private key does not match the CA certificate " + d + "/ca.pem"},
				{"malformed-cert", pair("garbage.pem", "ca.key"), certAt + d + "/garbage.pem: no PEM block found (want a CERTIFICATE block)"},
				{"malformed-key", pair("ca.pem", "garbage.pem"), keyAt + d + "/garbage.pem: no PEM block found"},
				{"key-as-cert", pair("ca.key", "ca.key"), certAt + d + "/ca.key: no PEM block found"},
				{"cert-without-key", settingsWith(`{"caCertPath":"` + d + `/ca.pem"}`), file + ":1:"},
				{"not-an-object", settingsWith(`true`), file + ":1:"},
			} {
				os.Remove(filepath.Join(d, "ran"))
				stdout, stderr, code := srtRun{u: u, dir: d, settings: tc.settings, args: []string{"sh", "-c", "touch ran; echo ran"}}.run(t)
				lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
				_, ranErr := os.Stat(filepath.Join(d, "ran"))
				if code != 125 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "srt: "+tc.want) ||
					!strings.Contains(stderr, "tlsTerminate") || strings.Contains(stderr, "mitm:") || ranErr == nil {
					t.Errorf("%s: exit %d, stdout %q, stderr %q, marker %v; want 125, one line starting %q, nothing run", tc.name, code, stdout, stderr, ranErr, "srt: "+tc.want)
				}
			}
		})
		t.Run("ca-key-unreadable", func(t *testing.T) {
			// The operator's CA in the working directory (a write root),
			// and a link to the key the sandbox left there in an earlier
			// run: neither spelling reads the key inside.
			d := u.workDir(t)
			u.write(t, filepath.Join(d, "keys", "ca.pem"), string(pki.caCertPEM))
			u.write(t, filepath.Join(d, "keys", "ca.key"), string(pki.caKeyPK))
			u.write(t, filepath.Join(d, "alias.key"), "->keys/ca.key")
			st := settingsWith(`{"caCertPath":"` + d + `/keys/ca.pem","caKeyPath":"` + d + `/keys/ca.key","extraCaCertPaths":["` + upCA + `","` + d + `/keys/extra.pem"]}`)
			stdout, stderr, code := sh(t, u, d, st, "cat keys/ca.key alias.key 2>&1; cat keys/ca.pem | head -1; curl -sS --max-time 10 "+base+"/with-own-ca; "+
				"for f in keys/ca.pem keys/ca.key keys/extra.pem; do (echo x > $f) 2>/dev/null && echo WROTE $f; done; mv keys keys.moved 2>/dev/null && echo MOVED")
			if strings.Contains(stdout, "WROTE") || strings.Contains(stdout, "MOVED") {
				t.Errorf("the CA files (or a missing extra CA) can be written or moved inside:\n%s", stdout)
			}
			if strings.Contains(stdout, "PRIVATE KEY") || !strings.Contains(stdout, "BEGIN CERTIFICATE") ||
				!strings.Contains(stdout, "upstream "+tlsTermIP+" saw /with-own-ca") {
				t.Errorf("exit %d: want the key unreadable, the certificate readable and curl through the operator's CA\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			// An allowRead naming the key, exactly or by a glob, does not
			// lift its deny.
			st2 := strings.Replace(st, `"allowWrite":["."]`, `"allowWrite":["."],"allowRead":["keys/*.key","`+d+`/keys/ca.key"]`, 1)
			if stdout, stderr, code := sh(t, u, d, st2, "cat keys/ca.key 2>&1 | head -1"); strings.Contains(stdout, "PRIVATE KEY") || code == 125 {
				t.Errorf("allowRead re-opens the CA key: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			// A directory on the key's path turned into a link between
			// runs: srt refuses rather than move the deny off the key.
			os.Rename(filepath.Join(d, "keys"), filepath.Join(d, "real"))
			u.write(t, filepath.Join(d, "keys"), "->real")
			os.Remove(filepath.Join(d, "ran"))
			stdout, stderr, code = sh(t, u, d, st, "touch ran; cat keys/ca.key")
			if _, err := os.Stat(filepath.Join(d, "ran")); code != 125 || err == nil || strings.Contains(stdout, "PRIVATE KEY") || !strings.Contains(stderr, "caKeyPath") {
				t.Errorf("key through a planted link: exit %d, marker %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
			}
		})
	})
}
