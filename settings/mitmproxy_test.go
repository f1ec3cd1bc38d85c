package settings

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestMITMProxy(t *testing.T) {
	s, err := Parse([]byte(`{"network": {"mitmProxy": {"socketPath": "/run/mitm/proxy.sock", "domains": ["*.example.com", "api.test"]}}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Network.MITMProxy
	if m == nil || m.SocketPath != "/run/mitm/proxy.sock" || !slices.Equal(m.Domains, []string{"*.example.com", "api.test"}) {
		t.Fatalf("MITMProxy = %+v", m)
	}
	for _, in := range []string{`{}`, `{"network": {"mitmProxy": null}}`} {
		s, err := Parse([]byte(in), "f.json")
		if err != nil || s.Network.MITMProxy != nil {
			t.Fatalf("%s: MITMProxy = %+v, %v; want nil", in, s.Network.MITMProxy, err)
		}
	}
}

func TestMITMProxyErrors(t *testing.T) {
	for _, tc := range []struct {
		in, path, msg string
		line, col     int
	}{
		{`{"network": {"mitmProxy": true}}`, "network.mitmProxy", "expected an object", 1, 27},
		{`{"network": {"mitmProxy": {"socketPath": "mitm.sock", "domains": ["a.test"]}}}`, "network.mitmProxy.socketPath", `"mitm.sock" must be an absolute path`, 1, 42},
		{`{"network": {"mitmProxy": {"socketPath": "~/mitm.sock", "domains": ["a.test"]}}}`, "network.mitmProxy.socketPath", "must be an absolute path", 1, 42},
		{`{"network": {"mitmProxy": {"socketPath": "/run/../tmp/m.sock", "domains": ["a.test"]}}}`, "network.mitmProxy.socketPath", "must be a clean path", 1, 42},
		{`{"network": {"mitmProxy": {"socketPath": 3, "domains": ["a.test"]}}}`, "network.mitmProxy.socketPath", "expected a string", 1, 42},
		{`{"network": {"mitmProxy": {"socketPath": "", "domains": ["a.test"]}}}`, "network.mitmProxy.socketPath", "must be an absolute path", 1, 42},
		{`{"network": {"mitmProxy": {"domains": ["a.test"]}}}`, "network.mitmProxy.socketPath", "is required", 1, 27},
		{`{"network": {"mitmProxy": {"socketPath": "/m.sock"}}}`, "network.mitmProxy.domains", "is required", 1, 27},
		{`{"network": {"mitmProxy": {"socketPath": "/m.sock", "domains": []}}}`, "network.mitmProxy.domains", "at least one", 1, 64},
		{`{"network": {"mitmProxy": {"socketPath": "/m.sock", "domains": null}}}`, "network.mitmProxy.domains", "at least one", 1, 64},
		{`{"network": {"mitmProxy": {"socketPath": "/m.sock", "domains": ["a..b"]}}}`, "network.mitmProxy.domains[0]", "", 1, 65},
		{`{"network": {"mitmProxy": {"socketPath": "/m.sock", "domains": ["ok.test", "http://x"]}}}`, "network.mitmProxy.domains[1]", "", 1, 76},
		{`{"network": {"mitmProxy": {"socketPath": "/m.sock", "domain": ["a.test"]}}}`, "network.mitmProxy", `did you mean "domains"?`, 1, 53},
		{`{"network": {"allowAllUnixSockets": true, "mitmProxy": {"socketPath": "/m.sock", "domains": ["a.test"]}}}`, "network.mitmProxy", "cannot be combined with allowAllUnixSockets", 1, 13},
		{`{"network": {"allowUnixSockets": ["/m.sock/"], "mitmProxy": {"socketPath": "/m.sock", "domains": ["a.test"]}}}`, "network.mitmProxy", "listed in allowUnixSockets", 1, 13},
	} {
		_, err := Parse([]byte(tc.in), "f.json")
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: error %v is not an *Error", tc.in, err)
		}
		if e.Path != tc.path || !strings.Contains(e.Msg, tc.msg) || e.Line != tc.line || e.Column != tc.col || e.File != "f.json" {
			t.Errorf("%s:\n got %s:%d:%d %s: %s\nwant %s:%d:%d %s: …%s…", tc.in, e.File, e.Line, e.Column, e.Path, e.Msg, "f.json", tc.line, tc.col, tc.path, tc.msg)
		}
	}
}
