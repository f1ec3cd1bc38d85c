package settings

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestTLSTerminate(t *testing.T) {
	s, err := Parse([]byte(`{"network": {"tlsTerminate": {"excludeDomains": ["*.mtls.example", "pinned.example:8443"],
	  "extraCaCertPaths": ["/etc/corp-roots.pem", "~/ca.pem"], "caCertPath": "/etc/srt/ca.pem", "caKeyPath": "~/.srt-ca.key",
	  "maxTunnels": 10, "handshakeTimeoutMs": 250}, "requireHostMatch": false}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	want := TLSTerminate{ExcludeDomains: []string{"*.mtls.example", "pinned.example:8443"},
		ExtraCACertPaths: []string{"/etc/corp-roots.pem", "~/ca.pem"}, CACertPath: "/etc/srt/ca.pem", CAKeyPath: "~/.srt-ca.key",
		MaxTunnels: 10, HandshakeTimeoutMs: 250}
	if got := s.Network.TLSTerminate; got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("TLSTerminate = %+v, want %+v", got, want)
	}
	if s.Network.HostMatch() {
		t.Fatal("requireHostMatch: false reads as on")
	}
	// {} turns termination on with the defaults; host matching is then on.
	s, err = Parse([]byte(`{"network": {"tlsTerminate": {}}}`), "f.json")
	if err != nil || s.Network.TLSTerminate == nil || !reflect.DeepEqual(*s.Network.TLSTerminate, TLSTerminate{}) || !s.Network.HostMatch() {
		t.Fatalf("{}: %+v host match %v, %v", s.Network.TLSTerminate, s.Network.HostMatch(), err)
	}
	for _, in := range []string{`{}`, `{"network": {"tlsTerminate": null, "requireHostMatch": null}}`} {
		s, err := Parse([]byte(in), "f.json")
		if err != nil || s.Network.TLSTerminate != nil || s.Network.RequireHostMatch != nil {
			t.Fatalf("%s: %+v %v, %v; want nil", in, s.Network.TLSTerminate, s.Network.RequireHostMatch, err)
		}
	}
}

func TestTLSTerminateErrors(t *testing.T) {
	for _, tc := range []struct {
		in, path, msg string
		line, col     int
	}{
		{`{"network": {"tlsTerminate": true}}`, "network.tlsTerminate", "expected an object ({} for the defaults), got a boolean", 1, 30},
		{`{"network": {"tlsTerminate": {"caCertPath": "/ca.pem"}}}`, "network.tlsTerminate.caCertPath", "needs caKeyPath", 1, 31},
		{`{"network": {"tlsTerminate": {"caKeyPath": "/ca.key"}}}`, "network.tlsTerminate.caKeyPath", "needs caCertPath", 1, 31},
		{`{"network": {"tlsTerminate": {"caCertPath": "ca.pem", "caKeyPath": "/k"}}}`, "network.tlsTerminate.caCertPath", "must be an absolute path", 1, 45},
		{`{"network": {"tlsTerminate": {"caCertPath": "", "caKeyPath": "/k"}}}`, "network.tlsTerminate.caCertPath", "must be an absolute path", 1, 45},
		{`{"network": {"tlsTerminate": {"caKeyPath": 1}}}`, "network.tlsTerminate.caKeyPath", "expected a string", 1, 44},
		{`{"network": {"tlsTerminate": {"extraCaCertPaths": ["/a", "rel.pem"]}}}`, "network.tlsTerminate.extraCaCertPaths[1]", "must be an absolute path", 1, 58},
		{`{"network": {"tlsTerminate": {"extraCaCertPaths": "/a"}}}`, "network.tlsTerminate.extraCaCertPaths", "expected an array", 1, 51},
		{`{"network": {"tlsTerminate": {"excludeDomains": ["bad domain"]}}}`, "network.tlsTerminate.excludeDomains[0]", "", 1, 50},
		{`{"network": {"tlsTerminate": {"maxTunnels": 0}}}`, "network.tlsTerminate.maxTunnels", "between 1 and 65536", 1, 45},
		{`{"network": {"tlsTerminate": {"maxTunnels": 65537}}}`, "network.tlsTerminate.maxTunnels", "between 1 and 65536", 1, 45},
		{`{"network": {"tlsTerminate": {"handshakeTimeoutMs": 99}}}`, "network.tlsTerminate.handshakeTimeoutMs", "between 100 and 600000", 1, 53},
		{`{"network": {"tlsTerminate": {"handshakeTimeoutMs": 1.5}}}`, "network.tlsTerminate.handshakeTimeoutMs", "must be an integer", 1, 53},
		{`{"network": {"tlsTerminate": {"excludeDomain": []}}}`, "network.tlsTerminate", `did you mean "excludeDomains"?`, 1, 31},
		{`{"network": {"requireHostMatch": "yes"}}`, "network.requireHostMatch", "expected a boolean", 1, 34},
	} {
		_, err := Parse([]byte(tc.in), "f.json")
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v, want *Error", tc.in, err)
			continue
		}
		if e.File != "f.json" || e.Path != tc.path || e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: got %s %s:%d:%d %q, want %s:%d:%d containing %q", tc.in, e.File, e.Path, e.Line, e.Column, e.Msg, tc.path, tc.line, tc.col, tc.msg)
		}
	}
}
