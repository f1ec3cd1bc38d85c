package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The web console (issue 21) in headless Chromium: e2e/console/
// console.test.mjs, driven by playwright-core against the real srtd, as
// root and as the unprivileged user. scripts/setup.sh installs chromium
// and the test's npm packages (the test runs npm ci itself if they are
// missing); it skips only where node or chromium is absent.

// consoleLine is srtd's one "Web console: <url>" line.
var consoleLine = regexp.MustCompile(`(?m)^Web console: (http://\S+/console/\?token=([0-9a-f]{64}))$`)

func TestConsoleBrowser(t *testing.T) {
	requireSandbox(t)
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(chromium); err != nil || serr != nil {
		t.Skipf("the console test needs node and %s (scripts/setup.sh installs them): %v %v", chromium, err, serr)
	}
	dir, err := filepath.Abs("console")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		// scripts/setup.sh runs it; a checkout without it needs it once.
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
		npm.Dir = dir
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in e2e/console (the browser test's playwright-core): %v\n%s", err, out)
		}
	}
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtdHome(t, u, u.workDir(t))
		var m []string
		for deadline := time.Now().Add(10 * time.Second); m == nil; time.Sleep(20 * time.Millisecond) {
			if m = consoleLine.FindStringSubmatch(d.stderr()); m == nil && time.Now().After(deadline) {
				t.Fatalf("no console URL line in\n%s", d.stderr())
			}
		}
		url, token := m[1], m[2]
		if !strings.HasPrefix(url, d.url+"/console/") {
			t.Errorf("console URL %s; want one on srtd's address %s", url, d.url)
		}
		if token == d.token {
			t.Error("the console's login token is the API token")
		}

		// The browser runs as the same user as srtd, with a home of its own.
		home := u.workDir(t)
		work := u.workDir(t)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := u.command(ctx, dir, []string{"HOME=" + home, "SRTD_CONSOLE_URL=" + url, "SRTD_WORKDIR=" + work, "SRTD_BACKEND=native", "CHROMIUM=" + chromium}, node, "console.test.mjs")
		out, err := cmd.CombinedOutput()
		t.Logf("%s", out)
		if err != nil {
			t.Fatalf("console.test.mjs: %v", err)
		}
		// The token is in that one line and nowhere else srtd wrote.
		if n := strings.Count(d.stderr(), token); n != 1 {
			t.Errorf("the login token is in srtd's output %d times; want once (its URL line):\n%s", n, d.stderr())
		}
	})
}

// TestSrtdConsoleOffBeyondLoopback: on a listener other hosts reach
// (--allow-non-loopback) the peer-uid check lets remote clients through,
// so the console, whose cookie any client can replay, is off: srtd
// prints why instead of a login URL, /console/ answers 404 with it, a
// cookie authorizes nothing, and the bearer-token API is unchanged.
func TestSrtdConsoleOffBeyondLoopback(t *testing.T) {
	env := []string{"PATH=" + cleanPATH, "HOME=" + t.TempDir(), "USER=" + os.Getenv("USER"), "SHELL=/bin/bash"}
	d := launchSrtd(t, buildSrtd(t), t.TempDir(), nil, env, 20*time.Second, "--addr", "0.0.0.0:0", "--allow-non-loopback")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.stderr(), "Web console:"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no console line in\n%s", d.stderr())
		}
	}
	if consoleLine.MatchString(d.stderr()) || !strings.Contains(d.stderr(), "Web console: off (") {
		t.Errorf("srtd beyond loopback printed a console URL, or no reason:\n%s", d.stderr())
	}
	_, p, err := net.SplitHostPort(strings.TrimPrefix(d.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + p
	get := func(path string, hdr ...string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest("GET", base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/console/"); code != 404 || !strings.Contains(body, "--allow-non-loopback") {
		t.Errorf("GET /console/: %d %q; want 404 saying why", code, body)
	}
	if code, _ := get("/v1/sandboxes", "Cookie", "srtd_console_"+p+"=x", "Sec-Fetch-Site", "same-origin"); code != 401 {
		t.Errorf("a cookie with the console off: %d; want 401", code)
	}
	if code, body := get("/v1/sandboxes", "Authorization", "Bearer "+d.token); code != 200 {
		t.Errorf("the bearer-token API: %d %s; want 200", code, body)
	}
}
