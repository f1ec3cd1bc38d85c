package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEnv(t *testing.T) {
	got := Env(3128, 1080)
	want := []string{
		"HTTP_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
		"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"ALL_PROXY=http://127.0.0.1:3128", "all_proxy=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		"GRPC_PROXY=http://127.0.0.1:3128", "grpc_proxy=http://127.0.0.1:3128",
		"FTP_PROXY=socks5h://127.0.0.1:1080", "ftp_proxy=socks5h://127.0.0.1:1080",
		"DOCKER_HTTP_PROXY=http://127.0.0.1:3128", "DOCKER_HTTPS_PROXY=http://127.0.0.1:3128",
		"RSYNC_PROXY=127.0.0.1:3128", "NODE_USE_ENV_PROXY=1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Env:\n got %q\nwant %q", got, want)
	}
}

func TestMergeJavaToolOptions(t *testing.T) {
	ours := "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128"
	for in, want := range map[string]string{
		"":                             ours,
		"  ":                           ours,
		"-Xmx1g":                       "-Xmx1g " + ours,
		"-Dhttp.proxyHost=corp -Xss2m": "-Dhttp.proxyHost=corp -Xss2m " + ours, // ours come last and win
		"-Xmx1g " + ours:               "-Xmx1g " + ours,                       // idempotent
	} {
		if got := MergeJavaToolOptions(in, 3128); got != want {
			t.Errorf("MergeJavaToolOptions(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPythonRequests: pip and requests read the same variables.
func TestPythonRequests(t *testing.T) {
	if err := exec.Command("python3", "-c", "import requests").Run(); err != nil {
		t.Skip("python3 requests not installed")
	}
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	port := portOf(t, srv.URL)
	script := `import requests, sys
r = requests.get(sys.argv[1], timeout=10)
print(r.status_code, r.text, end="")`
	out, errOut, code := run(t, proxyEnv(t, e), "python3", "-c", script, "http://allowed.test:"+port+"/rq")
	if code != 0 || out != "200 hello from origin allowed.test:"+port+" /rq" {
		t.Fatalf("requests allowed: %d %q %s", code, out, errOut)
	}
	out, _, _ = run(t, proxyEnv(t, e), "python3", "-c", script, "http://denied.test:"+port+"/")
	if out != "403 Connection blocked by network allowlist: "+deniedReason+"\n" {
		t.Fatalf("requests denied: %q", out)
	}
}

// TestGitCloneHTTP clones a repository over git's dumb HTTP protocol
// through the proxy, driven only by the Env variables.
func TestGitCloneHTTP(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(cleanEnv(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	work := filepath.Join(dir, "work")
	gitRun("init", "-q", work)
	os.WriteFile(filepath.Join(work, "README"), []byte("through the proxy\n"), 0o644)
	gitRun("-C", work, "add", "README")
	gitRun("-C", work, "commit", "-qm", "init")
	bare := filepath.Join(dir, "srv", "repo.git")
	gitRun("clone", "-q", "--bare", work, bare)
	gitRun("-C", bare, "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "srv"))))
	defer srv.Close()
	port := portOf(t, srv.URL)

	e := startProxy(t, baseRules)
	env := append(proxyEnv(t, e), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	dst := filepath.Join(dir, "clone")
	if _, errOut, code := run(t, env, "git", "clone", "-q", "http://allowed.test:"+port+"/repo.git", dst); code != 0 {
		t.Fatalf("git clone: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "README")); string(b) != "through the proxy\n" {
		t.Fatalf("README = %q", b)
	}
	_, errOut, code := run(t, env, "git", "clone", "-q", "http://denied.test:"+port+"/repo.git", filepath.Join(dir, "no"))
	if code == 0 || !strings.Contains(errOut, "403") {
		t.Fatalf("denied clone: exit %d: %s", code, errOut)
	}
}

func TestTrustEnv(t *testing.T) {
	env := TrustEnv("/b.pem")
	for _, k := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE", "CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "DENO_CERT",
		"HTTPLIB2_CA_CERTS", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", "BUNDLE_SSL_CA_CERT", "NPM_CONFIG_CAFILE"} {
		if !slices.Contains(env, k+"=/b.pem") {
			t.Errorf("TrustEnv lacks %s", k)
		}
	}
	j := MergeJavaTrustStore("-Xmx1g", "/s.p12", "changeit")
	want := "-Xmx1g -Djavax.net.ssl.trustStore=/s.p12 -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit"
	if j != want || MergeJavaTrustStore(j, "/s.p12", "changeit") != want {
		t.Fatalf("MergeJavaTrustStore = %q", j)
	}
	if got := MergeJavaTrustStore("-Xmx1g", "/a b.p12", "x"); got != "-Xmx1g" {
		t.Fatalf("a path with a space: %q", got)
	}
}

// ScrubEnv drops every *_PROXY variable and every value holding the
// parent's credentials, and keeps the rest (a user name alone is no
// secret: HOME and USER stay).
func TestScrubEnv(t *testing.T) {
	u, _ := url.Parse("http://alice:s3cret-pw@proxy.corp:3128")
	p := NewParent(u, u, "")
	env := ScrubEnv([]string{"HOME=/home/alice", "USER=alice", "PATH=/bin", "PIP_PROXY=http://alice:s3cret-pw@proxy.corp:3128",
		"npm_config_https_proxy=http://x@y", "SOCKS_PROXY=socks5://proxy.corp", "no_proxy=.corp", "MY_URL=https://alice:s3cret-pw@proxy.corp/",
		"TOKEN_NOTE=s3cret-pw", "OTHER=fine"}, p)
	want := []string{"HOME=/home/alice", "USER=alice", "PATH=/bin", "OTHER=fine"}
	if !slices.Equal(env, want) {
		t.Fatalf("ScrubEnv = %q, want %q", env, want)
	}
	if got := ScrubEnv([]string{"A=1", "HTTPS_PROXY=http://p"}, nil); !slices.Equal(got, []string{"A=1"}) {
		t.Fatalf("nil parent: %q", got)
	}
}
