package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// credSecrets are the real values of one TestCredentialsClients run, and
// the environment srt starts with.
type credSecrets struct {
	token, fileToken, netrcPW, denied, deniedFile string
	jwt, jwtSub, jwt2                             string
	jwtExp                                        float64
}

func newCredSecrets(t *testing.T) credSecrets {
	t.Helper()
	s := credSecrets{
		token:      "ghp_" + randomAlnum(t, 36),
		fileToken:  "glpat-" + randomAlnum(t, 20),
		netrcPW:    randomAlnum(t, 28),
		denied:     "deny-" + randomAlnum(t, 24),
		deniedFile: "denyfile-" + randomAlnum(t, 24),
		jwtSub:     "u-" + randomAlnum(t, 20),
		jwtExp:     float64(time.Now().Add(time.Hour).Unix()),
	}
	s.jwt = fakeJWT(t, map[string]any{"sub": s.jwtSub, "exp": s.jwtExp, "scope": "repo"})
	s.jwt2 = fakeJWT(t, map[string]any{"sub": "w-" + randomAlnum(t, 20), "exp": s.jwtExp})
	return s
}

// all is every real value, for the leak checks.
func (s credSecrets) all() []string {
	return []string{s.token, s.fileToken, s.netrcPW, s.denied, s.deniedFile, s.jwt, s.jwtSub, s.jwt2}
}

func (s credSecrets) env() []string {
	return []string{"TOKEN=" + s.token, "TOKEN_COPY=x" + s.token + "y", "DENIED=" + s.denied, "JWT=" + s.jwt, "JWT2=" + s.jwt2}
}

// credSettings is the settings document of TestCredentialsClients: hosts
// a and b allowed and terminated (trusting the upstreams' CA), httpRules
// allowing them GET and POST only, and the credentials block under test.
func credSettings(t *testing.T, a, b, upCA, sec string) string {
	t.Helper()
	onlyA := []string{a}
	doc := map[string]any{
		"filesystem": map[string]any{"allowWrite": []string{"."}},
		"network": map[string]any{
			"allowedDomains": []string{a, b},
			"tlsTerminate":   map[string]any{"extraCaCertPaths": []string{upCA}},
			"httpRules":      []any{map[string]any{"domains": []string{a, b}, "methods": []string{"GET", "POST"}}},
		},
		"credentials": map[string]any{
			"envVars": []any{
				map[string]any{"name": "TOKEN", "mode": "mask", "injectHosts": onlyA},
				map[string]any{"name": "DENIED", "mode": "deny"},
				map[string]any{"name": "JWT", "mode": "mask", "decode": "jwt", "maskClaims": []string{"sub"}, "injectHosts": onlyA},
				// No injectHosts: network.allowedDomains, a and b.
				map[string]any{"name": "JWT2", "mode": "mask", "decode": "jwt"},
			},
			"files": []any{
				map[string]any{"path": sec + "/token", "mode": "mask", "injectHosts": onlyA},
				map[string]any{"path": sec + "/netrc", "mode": "mask", "extract": `password (\S+)`, "injectHosts": onlyA},
				map[string]any{"path": sec + "/denied", "mode": "deny"},
			},
		},
	}
	b2, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b2)
}

// TestCredentialsClients: with credentials masked (environment
// variables, a token file, a .netrc-like file with extract, JWTs with
// decode "jwt"), real clients inside the sandbox — curl, git over HTTPS
// (credential helper and URL), python requests, Node's https and fetch —
// send the sentinel they see; the inject host A receives the real value
// (in headers, Basic auth and bodies), another allowed host B and plain
// HTTP to A receive the sentinel; A's echo of the real value comes back
// as the sentinel; and nothing captured (env, /proc/self/environ, the
// masked files, --debug output, violation records, files the sandbox
// wrote) holds a real value.
func TestCredentialsClients(t *testing.T) {
	requireSandbox(t)
	dir, err := os.MkdirTemp(baseDir, "creds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bareRepo(t, dir, "hello through masked credentials")
	pki := newTLSPKI(t, tlsUpstreamCN)
	upCA, nodeJS := filepath.Join(dir, "upstream-ca.pem"), filepath.Join(dir, "client.js")
	for p, b := range map[string][]byte{upCA: pki.caPEM, nodeJS: []byte(credNodeClientSrc)} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := newCredSecrets(t)
	a := startCredUpstream(t, pki, tlsTermIP, dir, s.token)
	b := startCredUpstream(t, pki, tlsExcludeIP, dir, s.token)
	plain := startCredUpstream(t, nil, tlsTermIP, dir, s.token)
	_, nodeErr := exec.LookPath("node")
	node22, _, node22Err := installNode(t, dir)
	if node22Err != nil {
		t.Logf("no Node 22 from the npm registry, its fetch is not tested: %v", node22Err)
	}

	forEachUser(t, func(t *testing.T, u *account) {
		for _, up := range []*credUpstream{a, b, plain} {
			up.reset()
		}
		wd, sec := u.workDir(t), u.workDir(t)                     // the secrets are outside the write root
		u.write(t, filepath.Join(sec, "token"), s.fileToken+"\n") // a token file ends with a newline; the secret is the token
		u.write(t, filepath.Join(sec, "netrc"), "machine "+tlsTermIP+" login x password "+s.netrcPW+"\n"+
			"machine "+tlsExcludeIP+" login x password "+s.netrcPW+"\n")
		u.write(t, filepath.Join(sec, "denied"), s.deniedFile+"\n")
		A, B := a.base(), b.base()
		bearer := func(v string) string { return ` -H "Authorization: Bearer ` + v + `" ` }
		curl := "curl -sS --max-time 10 "
		helper := `-c credential.helper='!f(){ echo username=x; echo password=$TOKEN; }; f' `
		fetch := func(url string) string {
			return "'" + node22 + "' -e 'fetch(\"" + url + "\", {headers: {authorization: \"Bearer \" + process.env.TOKEN}}).then(r => r.text()).then(t => process.stdout.write(t), e => { console.log(\"fetch error\", e.cause || e); process.exit(1) })'"
		}
		script := strings.Join([]string{
			"export GIT_TERMINAL_PROMPT=0",
			`echo "sentinel=$TOKEN"`, `echo "copy=$TOKEN_COPY"`, `echo "denied=${DENIED-unset}"`,
			`echo "filetoken=$(cat ` + sec + `/token)"`, `sed 's/^/netrc: /' ` + sec + `/netrc`,
			`cat ` + sec + `/denied 2>&1 | sed 's/^/denied-file: /'`,
			`echo "jwt=$JWT"`, `echo "jwt2=$JWT2"`,
			`env | sed 's/^/env: /'`, `cat /proc/self/environ | tr '\0' '\n' | sed 's/^/environ: /'`,
			// Python reads the tokens as JWTs: they must still parse.
			`python3 -c "import os,json,base64
for n in ('JWT','JWT2'):
    h,p,s=os.environ[n].split('.'); d=lambda x: json.loads(base64.urlsafe_b64decode(x+'='*(-len(x)%4)))
    print('jwt-py', n, d(h)['alg'], json.dumps(d(p), sort_keys=True))"`,
			// curl: header, plain HTTP, JSON body, file token, netrc (Basic).
			curl + "-i" + bearer("$TOKEN") + A + "/curl-a",
			curl + bearer("$TOKEN") + B + "/curl-b",
			curl + bearer("$TOKEN") + plain.base() + "/curl-plain",
			curl + `-H 'Content-Type: application/json' -d "{\"token\":\"$TOKEN\"}" ` + A + "/body-a",
			curl + `-H 'Content-Type: application/json' -d "{\"token\":\"$TOKEN\"}" ` + B + "/body-b",
			curl + bearer("$(cat "+sec+"/token)") + A + "/file-a",
			curl + "--netrc-file " + sec + "/netrc " + A + "/netrc-a",
			curl + "--netrc-file " + sec + "/netrc " + B + "/netrc-b",
			curl + bearer("$JWT") + A + "/jwt-a", curl + bearer("$JWT") + B + "/jwt-b",
			curl + bearer("$JWT2") + A + "/jwt2-a", curl + bearer("$JWT2") + B + "/jwt2-b",
			// python requests, Node's https, Node 22's fetch.
			`python3 -c "import os,requests
for u in ('` + A + `/requests-a','` + B + `/requests-b'):
    print(requests.get(u, headers={'Authorization':'Bearer '+os.environ['TOKEN']}, timeout=10).text, end='')"`,
			"if command -v node >/dev/null; then node " + nodeJS + " " + tlsTermIP + " " + strconv.Itoa(a.port) + " /node-a; node " + nodeJS + " " + tlsExcludeIP + " " + strconv.Itoa(b.port) + " /node-b; fi",
			"if [ -x '" + node22 + "' ]; then " + fetch(A+"/fetch-a") + "; " + fetch(B+"/fetch-b") + "; fi",
			// git: the upstreams take the real token only.
			"git " + helper + "clone -q " + A + "/git/repo.git c-helper && echo \"helper-clone=$(cat c-helper/README)\"",
			`git clone -q "https://x:$TOKEN@` + tlsTermIP + ":" + strconv.Itoa(a.port) + `/git/repo.git" c-url && echo "url-clone=$(cat c-url/README)"`,
			"git " + helper + "clone -q " + B + "/git/repo.git c-b 2>/dev/null || echo b-clone-refused",
			"git clone -q " + A + "/git/repo.git c-anon 2>/dev/null || echo anon-clone-refused",
			// Violations carrying the token: a host not allowed, a method
			// httpRules refuse (judged before any injection).
			"curl -sS -o /dev/null -w 'denied-host=%{http_code}\\n' --max-time 10" + bearer("$TOKEN") + "http://127.0.0.9:9/v/$TOKEN",
			"curl -sS -o /dev/null -w 'denied-rule=%{http_code}\\n' --max-time 10 -X DELETE" + bearer("$TOKEN") + A + "/del-a/$TOKEN",
			// A tunnel srt cannot see into would bring back unscrubbed what
			// an inject host stored: refused while a value is masked.
			"curl -sS -o /dev/null --max-time 10 --proxy socks5h://127.0.0.1:1080 " + B + "/socks 2>/dev/null || echo socks-refused",
		}, "\n")
		stdout, stderr, code := srtRun{u: u, dir: wd, settings: credSettings(t, tlsTermIP, tlsExcludeIP, upCA, sec),
			env: s.env(), pre: []string{"--debug"}, args: []string{"sh", "-c", script}, timeout: credDeadline}.run(t)
		report := "exit " + strconv.Itoa(code) + "\nstdout:\n" + stdout + "\nstderr:\n" + stderr
		if code == 125 {
			t.Fatalf("srt refused the settings: %s", report)
		}
		assertNoLeak(t, "srt's stdout", stdout, s.all()...)
		assertNoLeak(t, "srt's stderr (--debug, violations)", stderr, s.all()...)
		assertTreeNoLeak(t, wd, s.all()...)
		checkCredShown(t, s, stdout)

		sent := lineValue(stdout, "sentinel=")
		if sent == "" {
			t.Fatalf("no sentinel seen inside; %s", report)
		}
		b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
		netrcSent := lineValue(stdout, "netrc: machine "+tlsTermIP+" login x password ")
		jwtShown := lineValue(stdout, "jwt=")
		// What each upstream received: the real value at A over TLS only.
		for _, c := range []struct {
			up         *credUpstream
			path, auth string
		}{
			{a, "/curl-a", "Bearer " + s.token}, {b, "/curl-b", "Bearer " + sent}, {plain, "/curl-plain", "Bearer " + sent},
			{a, "/file-a", "Bearer " + s.fileToken},
			{a, "/netrc-a", "Basic " + b64("x:"+s.netrcPW)}, {b, "/netrc-b", "Basic " + b64("x:"+netrcSent)},
			{a, "/jwt-a", "Bearer " + s.jwt}, {b, "/jwt-b", "Bearer " + jwtShown},
			{a, "/jwt2-a", "Bearer " + s.jwt2}, {b, "/jwt2-b", "Bearer " + s.jwt2},
			{a, "/requests-a", "Bearer " + s.token}, {b, "/requests-b", "Bearer " + sent},
			{a, "/node-a", "Bearer " + s.token}, {b, "/node-b", "Bearer " + sent},
			{a, "/fetch-a", "Bearer " + s.token}, {b, "/fetch-b", "Bearer " + sent},
			{a, "/git", "Basic " + b64("x:"+s.token)}, {b, "/git-refused", "Basic " + b64("x:"+sent)},
		} {
			if (c.path == "/node-a" || c.path == "/node-b") && nodeErr != nil {
				continue
			}
			if (c.path == "/fetch-a" || c.path == "/fetch-b") && node22Err != nil {
				continue
			}
			if got, ok := c.up.got(c.path); !ok || got.auth != c.auth {
				t.Errorf("%s %s received Authorization %q (request seen: %v), want %q", c.up.base(), c.path, got.auth, ok, c.auth)
			}
		}
		// A client that printed the answer shows the echo of what the
		// upstream received as the sentinel, A's real value included.
		echoes := []string{"/curl-a", "/curl-b", "/curl-plain", "/requests-a", "/requests-b"}
		if nodeErr == nil {
			echoes = append(echoes, "/node-a", "/node-b")
		}
		if node22Err == nil {
			echoes = append(echoes, "/fetch-a", "/fetch-b")
		}
		for _, p := range echoes {
			if w := p + " auth=Bearer " + sent; !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks the echo %q", w)
			}
		}
		if got, _ := a.got("/body-a"); got.body != `{"token":"`+s.token+`"}` {
			t.Errorf("A received the body %q, want the real token in it", got.body)
		}
		if got, _ := b.got("/body-b"); got.body != `{"token":"`+sent+`"}` {
			t.Errorf("B received the body %q, want the sentinel in it", got.body)
		}
		if !strings.Contains(strings.ToLower(stdout), "x-echo-auth: bearer "+strings.ToLower(sent)) {
			t.Errorf("A's X-Echo-Auth header did not come back as the sentinel")
		}
		for _, w := range []string{"/body-a body={\"token\":\"" + sent + "\"}", "helper-clone=hello through masked credentials",
			"url-clone=hello through masked credentials", "b-clone-refused", "anon-clone-refused", "denied-host=403", "denied-rule=403"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks %q", w)
			}
		}
		if !strings.Contains(stdout, "socks-refused") {
			t.Errorf("a SOCKS5 tunnel was allowed while a value is masked (what comes back through it is not scrubbed)")
		}
		// The violations name what the sandbox sent: the sentinel.
		for _, w := range []string{"127.0.0.9", "DELETE /del-a/" + sent} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr lacks the violation naming %q", w)
			}
		}
		if _, ok := a.got("/del-a/" + sent); ok {
			t.Errorf("a request httpRules refuse reached A")
		}
		if t.Failed() {
			t.Log(report)
		}
	})
}

// checkCredShown checks what the sandbox saw in place of each secret:
// sentinels of the same shape, a denied variable unset and a denied file
// unreadable, JWTs that still parse with the unmasked claims kept.
func checkCredShown(t *testing.T, s credSecrets, stdout string) {
	t.Helper()
	sameShape := func(what, shown, real, prefix string) {
		if shown == "" || shown == real || len(shown) != len(real) || !strings.HasPrefix(shown, prefix) {
			t.Errorf("%s shows %q inside: want a sentinel as long as the real value, starting %q", what, shown, prefix)
		}
	}
	sent := lineValue(stdout, "sentinel=")
	sameShape("TOKEN", sent, s.token, "ghp_")
	sameShape("the token file", lineValue(stdout, "filetoken="), s.fileToken, "glpat-")
	if c := lineValue(stdout, "copy="); c != "x"+sent+"y" {
		t.Errorf("TOKEN_COPY shows %q inside, want the real value in it replaced by TOKEN's sentinel", c)
	}
	// Each extracted span is masked, the same value by the same sentinel;
	// the rest of the file is as written.
	pw1 := lineValue(stdout, "netrc: machine "+tlsTermIP+" login x password ")
	pw2 := lineValue(stdout, "netrc: machine "+tlsExcludeIP+" login x password ")
	sameShape("the netrc password", pw1, s.netrcPW, "")
	if pw1 != pw2 {
		t.Errorf("the netrc's two copies of one password show %q and %q, want one sentinel", pw1, pw2)
	}
	if v := lineValue(stdout, "denied="); v != "unset" || strings.Contains(stdout, "env: DENIED=") || strings.Contains(stdout, "environ: DENIED=") {
		t.Errorf("the denied variable is set inside (%q)", v)
	}
	if v := lineValue(stdout, "denied-file: "); v == "" || strings.Contains(v, "denyfile-") {
		t.Errorf("the denied file reads %q inside, want an error", v)
	}
	if lineValue(stdout, "env: TOKEN=") != sent || lineValue(stdout, "environ: TOKEN=") != sent {
		t.Errorf("env or /proc/self/environ shows TOKEN other than its sentinel")
	}
	// JWT: maskClaims ["sub"] masks sub and keeps the other claims.
	jwt := lineValue(stdout, "jwt=")
	claims := jwtClaims(jwt)
	if jwt == s.jwt || claims == nil || claims["sub"] == s.jwtSub || claims["sub"] == nil ||
		claims["scope"] != "repo" || claims["exp"] != s.jwtExp {
		t.Errorf("JWT shows %q inside (claims %v): want a JWT with sub masked, scope and exp kept", jwt, claims)
	}
	jwt2 := lineValue(stdout, "jwt2=")
	if c := jwtClaims(jwt2); jwt2 == s.jwt2 || c == nil {
		t.Errorf("JWT2 shows %q inside (claims %v): want another token that parses", jwt2, c)
	}
	// Python decodes both (json of the header and the payload).
	for _, n := range []string{"JWT", "JWT2"} {
		if v := lineValue(stdout, "jwt-py "+n+" "); !strings.HasPrefix(v, "HS256 {") {
			t.Errorf("python3 does not decode %s inside as a JWT (%q)", n, v)
		}
	}
}

// sigv4Server is credential/testdata/sigv4_server.py, an endpoint that
// verifies SigV4 signatures with botocore against the real keys.
const sigv4Server = "../credential/testdata/sigv4_server.py"

// startSigV4Front starts sigv4Server (plain HTTP on the host's 127.0.0.1)
// with the real keys, and a TLS front for it on tlsTermIP (the sandbox
// reaches 127.0.0.1 without the proxy: NO_PROXY names it) that forwards
// every request as received, Host included. It returns the front's URL
// and the server's log of verdicts.
func startSigV4Front(t *testing.T, pki *tlsPKI, dir, akid, secret string) (string, string) {
	t.Helper()
	logf := filepath.Join(dir, "sigv4.log")
	cmd := exec.Command("/usr/bin/python3", sigv4Server, "serve", "--log", logf)
	cmd.Env = append(os.Environ(), "SIGV4_REAL_AKID="+akid, "SIGV4_REAL_SECRET="+secret)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", sigv4Server, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "port ")
	if err != nil || !ok {
		t.Fatalf("%s did not say its port: %q %v", sigv4Server, line, err)
	}
	target, _ := url.Parse("http://127.0.0.1:" + port)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // signed: kept as the client sent it
	}}
	ln, err := net.Listen("tcp", tlsTermIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(rp)
	s.Listener.Close()
	s.Listener = ln
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return "https://" + ln.Addr().String(), logf
}

// TestCredentialsAWS: the aws CLI inside the sandbox, with
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY masked, reaches an endpoint
// that verifies SigV4 with the real keys (srt's proxy re-signs); the same
// CLI with masking off and the sandbox's fake keys is refused, so the
// verifier can fail.
func TestCredentialsAWS(t *testing.T) {
	requireSandbox(t)
	if _, err := os.Stat(sigv4Server); err != nil {
		t.Skipf("no %s on this branch yet (the sigv4 work brings it): %v", sigv4Server, err)
	}
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatalf("the aws CLI is not installed (scripts/setup.sh installs awscli): %v", err)
	}
	dir, err := os.MkdirTemp(baseDir, "creds-aws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	pki := newTLSPKI(t, tlsUpstreamCN)
	upCA := filepath.Join(dir, "upstream-ca.pem")
	if err := os.WriteFile(upCA, pki.caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	akid, secret := "AKIA"+strings.ToUpper(randomAlnum(t, 16)), randomAlnum(t, 40)
	front, logf := startSigV4Front(t, pki, dir, akid, secret)
	network := `"network":{"allowedDomains":["` + tlsTermIP + `"],"tlsTerminate":{"extraCaCertPaths":["` + upCA + `"]}}`
	masked := `{"filesystem":{"allowWrite":["."]},` + network + `,"credentials":{"envVars":[` +
		`{"name":"AWS_ACCESS_KEY_ID","mode":"mask"},{"name":"AWS_SECRET_ACCESS_KEY","mode":"mask"}]}}`
	unmasked := `{"filesystem":{"allowWrite":["."]},` + network + `}`
	ep := " --endpoint-url " + front
	script := strings.Join([]string{
		`echo "akid=$AWS_ACCESS_KEY_ID"`,
		"echo hello > obj.txt",
		"aws s3api put-object --bucket bkt --key hello.txt --body obj.txt" + ep + " >/dev/null; echo put-exit=$?",
		"aws s3 ls s3://bkt" + ep + "; echo ls-exit=$?",
		"aws sts get-caller-identity" + ep + "; echo sts-exit=$?",
	}, "\n")
	awsEnv := func(id, key string) []string {
		return []string{"AWS_ACCESS_KEY_ID=" + id, "AWS_SECRET_ACCESS_KEY=" + key, "AWS_DEFAULT_REGION=us-east-1",
			"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_PAGER="}
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Run("masked", func(t *testing.T) {
			wd := u.workDir(t)
			stdout, stderr, code := srtRun{u: u, dir: wd, settings: masked, env: awsEnv(akid, secret), pre: []string{"--debug"},
				args: []string{"sh", "-c", script}, timeout: credDeadline}.run(t)
			report := "exit " + strconv.Itoa(code) + "\nstdout:\n" + stdout + "\nstderr:\n" + stderr
			if code == 125 {
				t.Fatalf("srt refused the settings: %s", report)
			}
			assertNoLeak(t, "srt's stdout", stdout, akid, secret)
			assertNoLeak(t, "srt's stderr", stderr, akid, secret)
			if shown := lineValue(stdout, "akid="); shown == akid || len(shown) != len(akid) || !strings.HasPrefix(shown, "AKIA") {
				t.Errorf("AWS_ACCESS_KEY_ID shows %q inside, want a sentinel of its shape; %s", shown, report)
			}
			for _, w := range []string{"put-exit=0", "hello.txt", "ls-exit=0", "sts-exit=0"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q: the re-signed requests did not verify; %s", w, report)
				}
			}
		})
		t.Run("unmasked-fake-keys", func(t *testing.T) {
			// The keys the sandbox would see, sent as they are: refused.
			wd := u.workDir(t)
			fakeID, fakeKey := "AKIA"+strings.ToUpper(randomAlnum(t, 16)), randomAlnum(t, 40)
			stdout, stderr, code := srtRun{u: u, dir: wd, settings: unmasked, env: awsEnv(fakeID, fakeKey),
				args: []string{"sh", "-c", script}, timeout: credDeadline}.run(t)
			if strings.Contains(stdout, "sts-exit=0") || strings.Contains(stdout, "put-exit=0") || !strings.Contains(stdout, "put-exit=") {
				t.Errorf("the endpoint accepted keys it does not know (or the CLI did not run): exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
	})
	if b, err := os.ReadFile(logf); err != nil || !strings.Contains(string(b), `"ok": true`) && !strings.Contains(string(b), `"ok":true`) {
		t.Errorf("the verifier logged no verified request (%v):\n%s", err, b)
	}
}
