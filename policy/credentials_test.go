package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/srt-go/srt/settings"
)

// credPolicy compiles settings JSON (the tlsTerminate and allowedDomains
// given by net, the credentials by cred) with cwd as the working
// directory and write root.
func credPolicy(t *testing.T, cwd, net, cred string) (*Policy, error) {
	t.Helper()
	s, err := settings.Parse([]byte(`{"network": {`+net+`}, "filesystem": {"allowWrite": ["`+cwd+`"]}, "credentials": `+cred+`}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	return Compile(s, Env{Cwd: cwd, Home: cwd})
}

// keyOf returns the settings key err is placed at, failing the test
// when err is not a *settings.Error.
func keyOf(t *testing.T, err error) string {
	t.Helper()
	var se *settings.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *settings.Error", err)
	}
	return se.Path
}

const tlsNet = `"allowedDomains": ["api.example.com", "*.example.org"], "tlsTerminate": {}`

func TestCredentialEnv(t *testing.T) {
	const real, part = "ghp_0123456789abcdefghijABCDEFGHIJ012345", "hunter2-Very-Secret-Value"
	t.Setenv("SRT_T_MASK", real)
	t.Setenv("SRT_T_DENY", "withheld")
	t.Setenv("SRT_T_EXTRACT", "user=bob;pass="+part)
	t.Setenv("SRT_T_NM_DENY", "nothing here")
	t.Setenv("SRT_T_NM_WARN", "nothing here")
	t.Setenv("SRT_T_EMPTY", "")
	cwd := t.TempDir()
	p, err := credPolicy(t, cwd, tlsNet, `{"envVars": [
	  {"name": "SRT_T_MASK", "mode": "mask", "injectHosts": ["api.example.com"]},
	  {"name": "SRT_T_DENY", "mode": "deny"},
	  {"name": "SRT_T_EXTRACT", "mode": "mask", "extract": "pass=(\\S+)"},
	  {"name": "SRT_T_NM_DENY", "mode": "mask", "extract": "key=(\\S+)"},
	  {"name": "SRT_T_NM_WARN", "mode": "mask", "extract": "key=(\\S+)", "onExtractNoMatch": "warn"},
	  {"name": "SRT_T_EMPTY", "mode": "mask"},
	  {"name": "SRT_T_UNSET", "mode": "mask"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	set := p.Network.Credentials
	if set.Len() != 2 {
		t.Fatalf("%d secrets, want 2 (the masked and the extracted values)", set.Len())
	}
	env := set.Environ([]string{"SRT_T_MASK=" + real, "SRT_T_DENY=withheld", "SRT_T_EXTRACT=user=bob;pass=" + part,
		"SRT_T_NM_DENY=nothing here", "SRT_T_NM_WARN=nothing here", "SRT_T_EMPTY=", "OTHER=Bearer " + real, "PLAIN=x"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for _, kv := range env {
		if strings.Contains(kv, real) || strings.Contains(kv, part) {
			t.Errorf("a real value is shown: %q", kv)
		}
	}
	for _, k := range []string{"SRT_T_DENY", "SRT_T_NM_DENY"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s is not withheld", k)
		}
	}
	switch {
	case got["SRT_T_MASK"] == "" || len(got["SRT_T_MASK"]) != len(real):
		t.Errorf("SRT_T_MASK = %q, want a sentinel of the value's length", got["SRT_T_MASK"])
	case !strings.HasPrefix(got["SRT_T_EXTRACT"], "user=bob;pass="):
		t.Errorf("SRT_T_EXTRACT = %q, want only the extracted span masked", got["SRT_T_EXTRACT"])
	case got["SRT_T_NM_WARN"] != "nothing here" || got["PLAIN"] != "x" || got["OTHER"] != "Bearer "+got["SRT_T_MASK"]:
		t.Errorf("environment %v", got)
	}
	// The real value goes to the entry's injectHosts only; the extracted
	// one to allowedDomains (its default).
	if set.Egress("api.example.com", 443, true) == nil || set.Egress("x.example.org", 443, true) == nil {
		t.Error("nothing to inject on an inject host")
	}
	if r := set.Egress("x.example.org", 443, true); r != nil && r.String(got["SRT_T_MASK"]) != got["SRT_T_MASK"] {
		t.Error("SRT_T_MASK is injected outside its injectHosts")
	}
	if set.Egress("evil.example", 443, true) != nil || set.Egress("api.example.com", 80, false) != nil {
		t.Error("an injection where none is allowed")
	}

	// onExtractNoMatch "error" refuses at the key.
	_, err = credPolicy(t, cwd, tlsNet, `{"envVars": [{"name": "SRT_T_NM_DENY", "mode": "mask", "extract": "key=(\\S+)", "onExtractNoMatch": "error"}]}`)
	if k := keyOf(t, err); k != "credentials.envVars[0].extract" {
		t.Errorf("no match error at %q", k)
	}
	// A deny entry holds even for a variable srt does not have (srtd's
	// execs bring their own environment).
	p, err = credPolicy(t, cwd, "", `{"envVars": [{"name": "SRT_T_UNSET", "mode": "deny"}]}`)
	if err != nil || len(p.Network.Credentials.Environ([]string{"SRT_T_UNSET=1"})) != 0 {
		t.Fatalf("deny of an unset variable: %v", err)
	}
}

func TestCredentialAWSPairs(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("MY_ID", "AKIAIOSFODNN7EXAMPLF")
	t.Setenv("MY_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ")
	cwd := t.TempDir()
	p, err := credPolicy(t, cwd, tlsNet, `{"envVars": [{"name": "AWS_ACCESS_KEY_ID", "mode": "mask"}, {"name": "AWS_SECRET_ACCESS_KEY", "mode": "mask"},
	  {"name": "MY_ID", "mode": "mask"}, {"name": "MY_KEY", "mode": "mask"}], "awsPairs": [{"accessKeyIdVar": "MY_ID", "secretAccessKeyVar": "MY_KEY"}],
	  "sigv4": {"streaming": "passthrough"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Network.Credentials.Len() != 4 {
		t.Fatalf("%d secrets", p.Network.Credentials.Len())
	}
}

func TestCredentialNeedsTLS(t *testing.T) {
	t.Setenv("SRT_T_MASK", "s3cr3t-value-0123456789")
	cwd := t.TempDir()
	entry := `{"envVars": [{"name": "SRT_T_MASK", "mode": "mask"}]`
	_, err := credPolicy(t, cwd, `"allowedDomains": ["api.example.com"]`, entry+`}`)
	if k := keyOf(t, err); k != "credentials.envVars[0].mode" || !errors.Is(err, ErrUnenforceable) || !strings.Contains(err.Error(), "network.tlsTerminate") {
		t.Errorf("masking without tlsTerminate: %v", err)
	}
	p, err := credPolicy(t, cwd, `"allowedDomains": ["api.example.com"]`, entry+`, "allowPlaintextInject": true}`)
	if err != nil || p.Network.Credentials.Egress("api.example.com", 80, false) == nil {
		t.Errorf("allowPlaintextInject: %v", err)
	}
	// A deny needs no proxy.
	if _, err := credPolicy(t, cwd, "", `{"envVars": [{"name": "SRT_T_MASK", "mode": "deny"}]}`); err != nil {
		t.Error(err)
	}
}

func TestCredentialInjectHosts(t *testing.T) {
	t.Setenv("SRT_T_MASK", "s3cr3t-value-0123456789")
	cwd := t.TempDir()
	for _, tc := range []struct {
		net, hosts string
		ok         bool
	}{
		{`"allowedDomains": ["*.example.com"], "tlsTerminate": {}`, `"api.example.com", "*.a.example.com", "x.*.example.com"`, true},
		{`"allowedDomains": ["api.example.com:443"], "tlsTerminate": {}`, `"api.example.com"`, true},
		{`"allowedDomains": ["api.example.com"], "tlsTerminate": {}`, `"api.example.com:8443"`, true},
		{`"allowedDomains": ["api.example.com"], "tlsTerminate": {}`, `"evil.example"`, false},
		{`"allowedDomains": ["*.example.com"], "tlsTerminate": {}`, `"example.com"`, false},
		{`"allowedDomains": ["api.example.com:443"], "tlsTerminate": {}`, `"api.example.com:8443"`, false},
		{`"allowedDomains": ["*.example.com"], "deniedDomains": ["*.bad.example.com"], "tlsTerminate": {}`, `"ok.example.com", "x.bad.example.com"`, false},
		{`"allowedDomains": ["*.example.com"], "tlsTerminate": {"excludeDomains": ["pinned.example.com"]}`, `"ok.example.com", "pinned.example.com"`, false},
	} {
		_, err := credPolicy(t, cwd, tc.net, `{"envVars": [{"name": "SRT_T_MASK", "mode": "mask", "injectHosts": [`+tc.hosts+`]}]}`)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s / %s: %v", tc.net, tc.hosts, err)
		case !tc.ok && err == nil:
			t.Errorf("%s / %s: accepted", tc.net, tc.hosts)
		case !tc.ok && !strings.HasPrefix(keyOf(t, err), "credentials.envVars[0].injectHosts["):
			t.Errorf("%s / %s: error at %q", tc.net, tc.hosts, keyOf(t, err))
		}
	}
}

// TestCredentialDefaultHostsReachNowhere: without injectHosts a masked
// value goes to allowedDomains; when none can carry it (no allowed host,
// or each excluded from termination) the entry is refused, as an
// unreachable explicit entry is.
func TestCredentialDefaultHostsReachNowhere(t *testing.T) {
	t.Setenv("SRT_T_MASK", "s3cr3t-value-0123456789")
	cwd := t.TempDir()
	for _, tc := range []struct {
		net string
		ok  bool
	}{
		{`"allowedDomains": ["api.example.com"], "tlsTerminate": {}`, true},
		{`"allowedDomains": [], "tlsTerminate": {}`, false},
		{`"allowedDomains": ["api.example.com"], "tlsTerminate": {"excludeDomains": ["api.example.com"]}`, false},
		{`"allowedDomains": ["api.example.com", "ok.example.com"], "tlsTerminate": {"excludeDomains": ["api.example.com"]}`, true},
	} {
		_, err := credPolicy(t, cwd, tc.net, `{"envVars": [{"name": "SRT_T_MASK", "mode": "mask"}]}`)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.net, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: accepted", tc.net)
		case !tc.ok && keyOf(t, err) != "credentials.envVars[0]":
			t.Errorf("%s: error at %q", tc.net, keyOf(t, err))
		}
	}
}

func TestCredentialFiles(t *testing.T) {
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	const secret = "abcdefSECRET1234567890"
	write := func(name, data string) string {
		f := filepath.Join(cwd, name)
		if err := os.WriteFile(f, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		return f
	}
	masked, denied := write("creds", "user=bob\ntoken="+secret+"\n"), write("deny", secret)
	nomatch := write("nomatch", "nothing")
	os.Mkdir(filepath.Join(cwd, "allowed"), 0o755)
	p, err := credPolicy(t, cwd, tlsNet, `{"files": [
	  {"path": "`+masked+`", "mode": "mask", "extract": "token=(\\S+)"},
	  {"path": "`+denied+`", "mode": "deny"},
	  {"path": "~/missing", "mode": "mask"},
	  {"path": "`+nomatch+`", "mode": "mask", "extract": "token=(\\S+)"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.MaskedFiles) != 1 {
		t.Fatalf("MaskedFiles = %+v", p.MaskedFiles)
	}
	mf := p.MaskedFiles[0]
	if mf.Path != masked || mf.Perm != 0o440 || mf.Rule != "credentials.files[0]" ||
		!strings.HasPrefix(string(mf.Data), "user=bob\ntoken=") || strings.Contains(string(mf.Data), secret) || len(mf.Data) != len("user=bob\ntoken="+secret+"\n") {
		t.Errorf("masked file %+v %q", mf, mf.Data)
	}
	if p.Network.Credentials.Len() != 1 {
		t.Errorf("%d secrets", p.Network.Credentials.Len())
	}
	for _, f := range []string{masked, denied, filepath.Join(cwd, "missing"), nomatch} {
		if p.Writable(f) {
			t.Errorf("%s is writable", f)
		}
	}
	if p.Readable(denied) || p.Readable(nomatch) || !p.Readable(masked) {
		t.Errorf("readable: deny %v, no match %v, masked %v", p.Readable(denied), p.Readable(nomatch), p.Readable(masked))
	}

	// allowRead never lifts a credential file's deny.
	s, err := settings.Parse([]byte(`{"filesystem": {"allowWrite": ["`+cwd+`"], "allowRead": ["`+denied+`", "`+cwd+`"]},
	  "credentials": {"files": [{"path": "`+denied+`", "mode": "deny"}]}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Compile(s, Env{Cwd: cwd, Home: cwd}); err != nil || p.Readable(denied) {
		t.Errorf("allowRead lifts the deny: %v", err)
	}
}

func TestCredentialFilesRefused(t *testing.T) {
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	real := filepath.Join(cwd, "real")
	if err := os.WriteFile(real, []byte("secret-0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(real, filepath.Join(cwd, "link"))
	os.Link(real, filepath.Join(cwd, "hard"))
	other := filepath.Join(cwd, "other")
	os.WriteFile(other, []byte("secret-0123456789abcdef"), 0o644)
	syscall.Mkfifo(filepath.Join(cwd, "fifo"), 0o600)
	cases := map[string]string{"link": "a link a run could have planted", "hard": "a hard link", "fifo": "a fifo"}
	if os.Geteuid() == 0 {
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["other"] = "another user's file"
	}
	for name, what := range cases {
		_, err := credPolicy(t, cwd, tlsNet, `{"files": [{"path": "`+filepath.Join(cwd, name)+`", "mode": "mask"}]}`)
		if !errors.Is(err, ErrUnenforceable) {
			t.Errorf("%s: %v, want ErrUnenforceable", what, err)
		}
	}
	// A link planted in a write root is refused for a deny as well.
	if _, err := credPolicy(t, cwd, "", `{"files": [{"path": "`+filepath.Join(cwd, "link")+`", "mode": "deny"}]}`); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("deny through a link: %v", err)
	}
	// An unreadable file is an error at its path.
	if os.Geteuid() != 0 {
		os.Remove(filepath.Join(cwd, "hard"))
		os.Chmod(real, 0)
		_, err := credPolicy(t, cwd, tlsNet, `{"files": [{"path": "`+real+`", "mode": "mask"}]}`)
		if k := keyOf(t, err); k != "credentials.files[0].path" {
			t.Errorf("unreadable: %v", err)
		}
	}
	// filesystem.disabled: nothing to mount on.
	for _, mode := range []string{"mask", "deny"} {
		s, err := settings.Parse([]byte(`{"network": {`+tlsNet+`}, "filesystem": {"disabled": true}, "credentials": {"files": [{"path": "/x", "mode": "`+mode+`"}]}}`), "s.json")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Compile(s, Env{Cwd: cwd, Home: cwd})
		if k := keyOf(t, err); k != "credentials.files[0]" || !errors.Is(err, ErrUnenforceable) {
			t.Errorf("filesystem.disabled, %s: %v", mode, err)
		}
	}
}

// TestCredentialMaskedTunnels: a masked credential refuses the tunnels
// srt cannot scrub unless the settings say refuseOpaqueTunnels false, and
// refuses a user-run proxy, which srt's substitutions never see.
func TestCredentialMaskedTunnels(t *testing.T) {
	t.Setenv("SRT_T_MASK", "s3cr3t-value-0123456789")
	cwd := t.TempDir()
	const mask = `{"envVars": [{"name": "SRT_T_MASK", "mode": "mask"}]}`
	const net = `"allowedDomains": ["api.example.com"], "tlsTerminate": {}`
	p, err := credPolicy(t, cwd, net, mask)
	if err != nil || !p.Network.Filter.RefuseOpaqueTunnels {
		t.Fatalf("masked: refuseOpaqueTunnels %v, %v; want on", p != nil && p.Network.Filter.RefuseOpaqueTunnels, err)
	}
	if p, err = credPolicy(t, cwd, net+`, "refuseOpaqueTunnels": false`, mask); err != nil || p.Network.Filter.RefuseOpaqueTunnels {
		t.Fatalf("refuseOpaqueTunnels false: %v; want off as asked", err)
	}
	if p, err = credPolicy(t, cwd, net, `{"envVars": [{"name": "SRT_T_MASK", "mode": "deny"}]}`); err != nil || p.Network.Filter.RefuseOpaqueTunnels {
		t.Fatalf("deny only: %v; want tunnels as they were", err)
	}
	for _, k := range []string{"httpProxyPort", "socksProxyPort"} {
		_, err := credPolicy(t, cwd, net+`, "`+k+`": 8080`, mask)
		if err == nil || keyOf(t, err) != "network."+k {
			t.Errorf("%s with a mask: %v", k, err)
		}
	}
}
