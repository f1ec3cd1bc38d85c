package netrule

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

func TestLoopbackPorts(t *testing.T) {
	tests := []struct {
		name string
		r    Rules
		skip []int
		want string
	}{
		{"localhost-port", Rules{Allowed: []string{"localhost:3000"}}, nil, "[127.0.0.1:3000 [::1]:3000]"},
		{"localhost-spellings", Rules{Allowed: []string{"LOCALHOST.:3000", "localhost:3000"}}, nil, "[127.0.0.1:3000 [::1]:3000]"},
		{"ipv4", Rules{Allowed: []string{"127.0.0.1:5432"}}, nil, "[127.0.0.1:5432]"},
		{"ipv4-aton", Rules{Allowed: []string{"127.1:5432", "2130706434:80"}}, nil, "[127.0.0.1:5432 127.0.0.2:80]"},
		{"ipv6", Rules{Allowed: []string{"[::1]:8080"}}, nil, "[[::1]:8080]"},
		{"mapped", Rules{Allowed: []string{"[::ffff:127.0.0.1]:8080"}}, nil, "[127.0.0.1:8080]"},
		{"no-port-opens-nothing", Rules{Allowed: []string{"localhost", "127.0.0.1", "[::1]"}}, nil, "[]"},
		{"wildcard-opens-nothing", Rules{Allowed: []string{"*.dev.localhost:3000"}}, nil, "[]"},
		{"allow-all-opens-nothing", Rules{AllowAll: true}, nil, "[]"},
		{"not-loopback", Rules{Allowed: []string{"10.0.0.1:80", "[::2]:80", "example.com:80", "0.0.0.0:80"}}, nil, "[]"},
		{"denied-name", Rules{Allowed: []string{"localhost:3000"}, Denied: []string{"localhost"}}, nil, "[]"},
		{"denied-port", Rules{Allowed: []string{"localhost:3000", "localhost:3001"}, Denied: []string{"*:3001"}}, nil, "[127.0.0.1:3000 [::1]:3000]"},
		{"denied-literal", Rules{Allowed: []string{"localhost:3000"}, Denied: []string{"[::1]"}}, nil, "[127.0.0.1:3000 [::1]:3000]"},
		{"denied-both", Rules{Allowed: []string{"localhost:3000"}, Denied: []string{"[::1]", "127.0.0.1"}}, nil, "[]"},
		{"denied-resolved", Rules{Allowed: []string{"localhost:3000"}, DeniedAddresses: []string{"127.0.0.0/8", "::1"}}, nil, "[]"},
		{"skip-proxy-ports", Rules{Allowed: []string{"localhost:3128", "127.0.0.1:1080", "localhost:1"}}, []int{3128, 1080}, "[127.0.0.1:1 [::1]:1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fmt.Sprint(MustCompile(tt.r).LoopbackPorts(tt.skip...))
			if got != tt.want {
				t.Errorf("LoopbackPorts = %s, want %s", got, tt.want)
			}
		})
	}
	if got := (*Policy)(nil).LoopbackPorts(); got != nil {
		t.Errorf("nil Policy: %v", got)
	}
}

func TestLoopbackTargets(t *testing.T) {
	ap := netip.MustParseAddrPort
	tests := []struct {
		name   string
		r      Rules
		at     string
		want   string
		reason string
		rule   string
	}{
		{"localhost-v4", Rules{Allowed: []string{"localhost:3000"}}, "127.0.0.1:3000", "[127.0.0.1:3000 [::1]:3000]", "", ""},
		{"localhost-v6", Rules{Allowed: []string{"localhost:3000"}}, "[::1]:3000", "[[::1]:3000 127.0.0.1:3000]", "", ""},
		{"literal-only-itself", Rules{Allowed: []string{"127.0.0.1:5432"}}, "127.0.0.1:5432", "[127.0.0.1:5432]", "", ""},
		{"literal-v6-only-itself", Rules{Allowed: []string{"[::1]:5432"}}, "[::1]:5432", "[[::1]:5432]", "", ""},
		{"literal-and-name", Rules{Allowed: []string{"127.0.0.1:5432", "localhost:5432"}}, "127.0.0.1:5432", "[127.0.0.1:5432 [::1]:5432]", "", ""},
		{"other-port", Rules{Allowed: []string{"localhost:3000"}}, "127.0.0.1:3001", "[]", ReasonNotAllowed, ""},
		{"name-not-for-127.0.0.2", Rules{Allowed: []string{"localhost:3000"}}, "127.0.0.2:3000", "[]", ReasonNotAllowed, ""},
		{"removed", Rules{}, "127.0.0.1:3000", "[]", ReasonNotAllowed, ""},
		{"denied-name", Rules{Allowed: []string{"localhost:3000"}, Denied: []string{"localhost:3000"}, DeniedReasons: map[string]string{"localhost:3000": "no dev server"}}, "127.0.0.1:3000", "[]", "no dev server", "localhost:3000"},
		{"denied-literal-falls-to-other", Rules{Allowed: []string{"localhost:3000"}, Denied: []string{"127.0.0.1"}}, "127.0.0.1:3000", "[[::1]:3000]", "", ""},
		{"denied-resolved", Rules{Allowed: []string{"localhost:3000"}, DeniedAddresses: []string{"127.0.0.0/8", "::1"}}, "127.0.0.1:3000", "[]", ReasonResolvedDenied, "127.0.0.0/8"},
		{"allow-all-name", Rules{AllowAll: true}, "[::1]:9", "[[::1]:9 127.0.0.1:9]", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, d := MustCompile(tt.r).LoopbackTargets(ap(tt.at))
			if s := fmt.Sprint(got); s != tt.want {
				t.Errorf("targets = %s, want %s", s, tt.want)
			}
			if len(got) == 0 && (d.Allowed || d.Reason != tt.reason || d.Rule != tt.rule) {
				t.Errorf("decision = %+v, want refused with reason %q rule %q", d, tt.reason, tt.rule)
			}
			if len(got) > 0 && slices.Contains(got, netip.AddrPort{}) {
				t.Errorf("invalid target in %v", got)
			}
		})
	}
}
