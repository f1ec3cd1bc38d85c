package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// TestSrtdTerminalNetwork: a native terminal's network is the seed's
// "open" by default — a loopback server under a name on no allow-list
// (localhost) answers through the terminal's proxy — while the fixed
// deny list (telemetry), cloud metadata, srtd's own API and IP literals
// stay refused; "network": "baseline" refuses that name again; GET shows
// the mode in force.
func TestSrtdTerminalNetwork(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "dev-server") }))
		_, devPort, _ := net.SplitHostPort(ln.Addr().String())
		d := startSrtdHome(t, u, u.workDir(t))
		su, _ := url.Parse(d.url)

		open := map[string]string{
			"unlisted-name": "http://localhost:" + devPort + "/",
			"deny-list":     "http://statsig.anthropic.com/",
			"metadata":      "http://169.254.169.254/latest/meta-data/",
			"srtd-by-name":  "http://localhost:" + su.Port() + "/healthz",
			"srtd-literal":  "http://" + su.Host + "/healthz",
			"ip-literal":    "http://" + ln.Addr().String() + "/",
		}
		want := map[string]string{"unlisted-name": "200", "deny-list": "403", "metadata": "403",
			"srtd-by-name": "403", "srtd-literal": "403", "ip-literal": "403"}
		got, info := terminalCurl(t, d, u, "", open)
		if info.Network != api.TerminalNetworkOpen {
			t.Errorf("default terminal: network %q; want open", info.Network)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("open %s (%s): HTTP %s; want %s", k, open[k], got[k], w)
			}
		}

		// A mode a backend cannot give is a 400 naming the field, never a
		// silently other network.
		for _, req := range []client.TerminalRequest{
			{Backend: port.BackendNone, Network: api.TerminalNetworkBaseline},
			{Backend: port.BackendMicroVM, Network: api.TerminalNetworkOpen},
			{Backend: port.BackendNative, Network: "wide"},
		} {
			term, err := d.c.OpenTerminal(context.Background(), req)
			if err == nil {
				term.Close()
			}
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Field != "network" {
				t.Errorf("%+v: %v; want a 400 on field network", req, err)
			}
		}

		got, info = terminalCurl(t, d, u, api.TerminalNetworkBaseline, map[string]string{"unlisted-name": open["unlisted-name"]})
		if info.Network != api.TerminalNetworkBaseline {
			t.Errorf("baseline terminal: network %q", info.Network)
		}
		if got["unlisted-name"] != "403" {
			t.Errorf("baseline unlisted-name: HTTP %s; want 403", got["unlisted-name"])
		}
		if !strings.Contains(d.stderr(), "terminalNetwork=open") {
			t.Errorf("the start-up line does not say the terminals' network is open:\n%s", d.stderr())
		}

		// --terminal-network baseline makes baseline the default, and
		// says so; a request may still ask for open.
		db := startSrtdHome(t, u, u.workDir(t), "--terminal-network", "baseline")
		if !strings.Contains(db.stderr(), "terminalNetwork=baseline") {
			t.Errorf("--terminal-network baseline: start-up line:\n%s", db.stderr())
		}
		got, info = terminalCurl(t, db, u, "", map[string]string{"unlisted-name": open["unlisted-name"]})
		if info.Network != api.TerminalNetworkBaseline || got["unlisted-name"] != "403" {
			t.Errorf("--terminal-network baseline, default terminal: network %q, HTTP %s; want baseline, 403", info.Network, got["unlisted-name"])
		}
		got, info = terminalCurl(t, db, u, api.TerminalNetworkOpen, map[string]string{"unlisted-name": open["unlisted-name"]})
		if info.Network != api.TerminalNetworkOpen || got["unlisted-name"] != "200" {
			t.Errorf("--terminal-network baseline, network open: network %q, HTTP %s; want open, 200", info.Network, got["unlisted-name"])
		}
	})
}

// terminalCurl opens a native terminal asking for network, checks that
// GET reports the mode the POST did, runs curl through the terminal's
// proxy for each url and returns the HTTP codes by name.
func terminalCurl(t *testing.T, d *srtd, u *account, network api.TerminalNetwork, urls map[string]string) (map[string]string, api.TerminalInfo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	term, err := d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendNative, Cwd: u.workDir(t), Network: network, Env: map[string]string{"PS1": "$ "}})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.url+"/v1/terminals/"+term.Info.ID, nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got api.TerminalInfo
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if got.Network != term.Info.Network {
		t.Errorf("GET says network %q, POST said %q", got.Network, term.Info.Network)
	}

	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		r := bufio.NewReader(term)
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			mu.Lock()
			out.WriteByte(b)
			mu.Unlock()
		}
	}()
	term.Write([]byte("bash --norc --noprofile\n"))
	codes := map[string]string{}
	for name, u := range urls {
		// --noproxy '': through the terminal's proxy even for localhost.
		fmt.Fprintf(term, "echo \"R:%s:$(curl -s -o /dev/null -w '%%{http_code}' --noproxy '' --max-time 10 '%s')\"\n", name, u)
		re := regexp.MustCompile(`R:` + regexp.QuoteMeta(name) + `:(\d{3})`)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			m := re.FindSubmatch(out.Bytes())
			mu.Unlock()
			if m != nil {
				codes[name] = string(m[1])
				break
			}
			if time.Now().After(deadline) {
				mu.Lock()
				t.Fatalf("no answer for %s in %q", name, out.String())
				mu.Unlock()
			}
		}
	}
	term.Write([]byte("exit\nexit\n"))
	term.Wait()
	return codes, term.Info
}
