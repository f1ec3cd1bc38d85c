package port

import (
	"context"
	"slices"
	"testing"
)

// TestHandleNetwork: a handle says the egress really in force, not just
// networkEnabled: backend none is on the host's network whatever the
// spec said (the console showed "network on" for it), and the handle
// carries the spec's allow-list and workdir.
func TestHandleNetwork(t *testing.T) {
	ctx := context.Background()
	rt := noneRuntime(t, Options{})
	sb, err := rt.Launch(ctx, Spec{SessionID: "n", NetworkEnabled: false, EgressAllowlist: []string{"a.example"}, GuestWorkdir: "/w"}, BackendNone)
	if err != nil {
		t.Fatal(err)
	}
	h := sb.Handle()
	if h.Network != NetworkHost || !slices.Equal(h.EgressAllowlist, []string{"a.example"}) || h.GuestWorkdir != "/w" {
		t.Errorf("none session's handle: network %q, egressAllowlist %q, guestWorkdir %q; want host, [a.example], /w", h.Network, h.EgressAllowlist, h.GuestWorkdir)
	}
	sb, err = rt.Launch(ctx, Spec{SessionID: "m"}, BackendNone)
	if err != nil {
		t.Fatal(err)
	}
	if h := sb.Handle(); h.EgressAllowlist == nil {
		t.Error("no allow-list: nil; want [] (the schema requires an array)")
	}
	for _, c := range []struct {
		b    Backend
		on   bool
		want HandleNetwork
	}{{BackendNone, true, NetworkHost}, {BackendNone, false, NetworkHost}, {BackendNative, true, NetworkAllowlist},
		{BackendNative, false, NetworkOff}, {BackendMicroVM, true, NetworkAllowlist}, {BackendMicroVM, false, NetworkOff}} {
		if got := handleNetwork(c.b, c.on); got != c.want {
			t.Errorf("handleNetwork(%s, %v) = %s; want %s", c.b, c.on, got, c.want)
		}
	}
}
