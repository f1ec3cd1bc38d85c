package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/settings"
)

func TestParentProxyCompile(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		pp   *settings.ParentProxy
		env  map[string]string
		want string // Parent.String(); "none" for nil
	}{
		{"none", nil, nil, "none"},
		{"env-upper-first", nil, map[string]string{"HTTP_PROXY": "http://a:1", "http_proxy": "http://b:1"}, "http=http://a:1 https=http://a:1"},
		{"env-lower", nil, map[string]string{"https_proxy": "https://u:secret@c:2"}, "https=https://***@c:2"},
		{"env-empty-is-unset", nil, map[string]string{"HTTP_PROXY": "", "http_proxy": "d:3"}, "http=http://d:3 https=http://d:3"},
		{"settings-win", &settings.ParentProxy{HTTP: "http://s:4"}, map[string]string{"HTTP_PROXY": "http://a:1"}, "http=http://s:4 https=http://s:4"},
		{"key-by-key", &settings.ParentProxy{HTTPS: "http://s:4"}, map[string]string{"HTTP_PROXY": "http://a:1"}, "http=http://a:1 https=http://s:4"},
		{"settings-empty-object", &settings.ParentProxy{}, map[string]string{"HTTP_PROXY": "http://a:1"}, "http=http://a:1 https=http://a:1"},
	} {
		p, err := parentProxy(tc.pp, env(tc.env))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := p.String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	_, err := parentProxy(nil, env(map[string]string{"HTTPS_PROXY": "ftp://u:secret@x"}))
	var ee *EnvError
	if !errors.Is(err, settings.ErrProxyURL) || !errors.As(err, &ee) || !strings.HasPrefix(err.Error(), "HTTPS_PROXY (srt's environment): ") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("bad env: %v", err)
	}
	// Compile does not put the settings file's name on it.
	s := settings.Default()
	s.Source = "/nonexistent/s.json"
	t.Setenv("HTTPS_PROXY", "ftp://u:secret@x")
	if _, err := Compile(s, Env{Cwd: t.TempDir(), Home: t.TempDir()}); err == nil || strings.Contains(err.Error(), s.Source) || !errors.As(err, &ee) {
		t.Fatalf("Compile, bad env: %v", err)
	}
	// A key's value is a KeyError naming it.
	_, err = parentProxy(&settings.ParentProxy{HTTPS: "http://p:1/x"}, env(nil))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "network.parentProxy.https" || !errors.Is(err, settings.ErrProxyURL) {
		t.Fatalf("bad key: %v", err)
	}
}

// TestSettingsFileReadDenied: a settings file holding parent proxy
// credentials (a user name alone counts) is unreadable in the sandbox,
// even under an allowRead of its directory, and so is the target of a
// symlink it was read through; one without credentials stays readable.
func TestSettingsFileReadDenied(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	for _, tc := range []struct {
		name, pp string
		link     bool
		denied   bool
	}{
		{"password", `"http":"http://u:pw@proxy:3128"`, false, true},
		{"user-only", `"https":"http://u@proxy:3128"`, false, true},
		{"through-link", `"http":"http://u:pw@proxy:3128"`, true, true},
		{"no-credentials", `"http":"http://proxy:3128"`, false, false},
		{"allow-glob", `"http":"http://u:pw@proxy:3128"`, false, true},
		{"allow-exact", `"http":"http://u:pw@proxy:3128"`, false, true},
	} {
		file := filepath.Join(dir, tc.name+".json")
		allow := dir
		switch tc.name { // an allowRead naming the file does not lift the deny
		case "allow-glob":
			allow = dir + "/*.json"
		case "allow-exact":
			allow = file
		}
		body := `{"filesystem": {"allowRead": ["` + allow + `"]}, "network": {"parentProxy": {` + tc.pp + `}}}`
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		load := file
		if tc.link {
			load = filepath.Join(dir, tc.name+"-link.json")
			if err := os.Symlink(file, load); err != nil {
				t.Fatal(err)
			}
		}
		s, err := settings.Load(load)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(s, Env{Cwd: dir, Home: dir})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := !p.Readable(file); got != tc.denied {
			t.Errorf("%s: %s denied = %v, want %v", tc.name, file, got, tc.denied)
		}
		if !p.Readable(filepath.Join(dir, "other")) {
			t.Errorf("%s: its directory became unreadable", tc.name)
		}
	}
}
