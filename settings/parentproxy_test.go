package settings

import (
	"errors"
	"strings"
	"testing"
)

func TestParentProxy(t *testing.T) {
	s, err := Parse([]byte(`{"network": {"parentProxy": {"http": "proxy.corp:3128", "https": "https://u:p%40ss@proxy.corp:8443/", "noProxy": [".corp", "10.0.0.0/8", "host:8080"]}}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	want := ParentProxy{HTTP: "proxy.corp:3128", HTTPS: "https://u:p%40ss@proxy.corp:8443/", NoProxy: ".corp,10.0.0.0/8,host:8080"}
	if got := s.Network.ParentProxy; got == nil || *got != want {
		t.Fatalf("ParentProxy = %+v, want %+v", got, want)
	}
	s, err = Parse([]byte(`{"network": {"parentProxy": {"http": "http://p:1", "noProxy": "a.example, *"}}}`), "f.json")
	if err != nil || s.Network.ParentProxy.NoProxy != "a.example, *" {
		t.Fatalf("string noProxy: %+v, %v", s.Network.ParentProxy, err)
	}
	// Absent and null both leave it nil: srt's environment then applies.
	for _, in := range []string{`{}`, `{"network": {"parentProxy": null}}`} {
		s, err := Parse([]byte(in), "f.json")
		if err != nil || s.Network.ParentProxy != nil {
			t.Fatalf("%s: ParentProxy = %+v, %v; want nil", in, s.Network.ParentProxy, err)
		}
	}
}

func TestParentProxyErrors(t *testing.T) {
	for _, tc := range []struct {
		in, path, msg string
		line, col     int
	}{
		{`{"network": {"parentProxy": {"http": "socks5://p:1080"}}}`, "network.parentProxy.http", `scheme "socks5" is not supported`, 1, 38},
		{`{"network": {"parentProxy": {"https": "http://u:secret@[::1"}}}`, "network.parentProxy.https", "does not parse as a URL", 1, 39},
		{`{"network": {"parentProxy": {"http": "http://u:secret@p:99999"}}}`, "network.parentProxy.http", "port must be 1..65535", 1, 38},
		{`{"network": {"parentProxy": {"http": "http://secretuser@p:99999"}}}`, "network.parentProxy.http", "port must be 1..65535", 1, 38},
		{`{"network": {"parentProxy": {"http": "http://secretuser@p:1/path"}}}`, "network.parentProxy.http", `invalid proxy URL "http://***@p:1/path": a proxy URL has no path`, 1, 38},
		{`{"network": {"parentProxy": {"http": "http://p:1/path"}}}`, "network.parentProxy.http", `invalid proxy URL "http://p:1/path": a proxy URL has no path`, 1, 38},
		{`{"network": {"parentProxy": {"http": "secretuser@p:1/x/y@z"}}}`, "network.parentProxy.http", `invalid proxy URL "***@z": a proxy URL has no path`, 1, 38},
		{`{"network": {"parentProxy": {"http": "p:1?q"}}}`, "network.parentProxy.http", `invalid proxy URL "p:1?q": a proxy URL has no path`, 1, 38},
		{`{"network": {"parentProxy": {"http": "http://"}}}`, "network.parentProxy.http", "has no host", 1, 38},
		{`{"network": {"parentProxy": {"http": ""}}}`, "network.parentProxy.http", "empty", 1, 38},
		{`{"network": {"parentProxy": {"http": 3}}}`, "network.parentProxy.http", "expected a string", 1, 38},
		{`{"network": {"parentProxy": {"htps": "p:1"}}}`, "network.parentProxy", `did you mean "https"?`, 1, 30},
		{`{"network": {"parentProxy": {"noProxy": ["a", "b,c"]}}}`, "network.parentProxy.noProxy[1]", "without commas", 1, 47},
		{`{"network": {"parentProxy": {"noProxy": 1}}}`, "network.parentProxy.noProxy", "expected a string or an array of strings", 1, 41},
		{`{"network": {"parentProxy": "p:1"}}`, "network.parentProxy", "expected an object", 1, 29},
	} {
		_, err := Parse([]byte(tc.in), "f.json")
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v, want *Error", tc.in, err)
			continue
		}
		if e.Path != tc.path || e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: got %s:%d:%d %q, want %s:%d:%d containing %q", tc.in, e.Path, e.Line, e.Column, e.Msg, tc.path, tc.line, tc.col, tc.msg)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error shows the password: %v", tc.in, err)
		}
		if strings.Contains(tc.in, "\"http") && strings.HasSuffix(tc.path, "http") || strings.HasSuffix(tc.path, "https") {
			if tc.msg != "expected a string" && !errors.Is(err, ErrProxyURL) {
				t.Errorf("%s: error does not wrap ErrProxyURL: %v", tc.in, err)
			}
		}
	}
}
