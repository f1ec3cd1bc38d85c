package policy

import (
	"testing"

	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/settings"
)

func TestNetworkOfFilter(t *testing.T) {
	s, err := settings.Parse([]byte(`{"network": {"allowedDomains": ["a.test"], "httpRules": [{"domains": ["a.test:443"], "methods": ["GET"]}],
		"refuseOpaqueTunnels": true, "ambiguousRequestTarget": "normalize", "stripResponseHeaders": ["set-cookie"]}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	n, err := NetworkOf(s)
	if err != nil {
		t.Fatal(err)
	}
	f := n.Filter
	if !f.HTTPRules.Names("A.test.", 443) || f.HTTPRules.Names("a.test", 80) || !f.RefuseOpaqueTunnels ||
		f.AmbiguousTarget != proxy.AmbiguousNormalize || len(f.StripResponseHeaders) != 1 {
		t.Errorf("filter %+v", f)
	}
	if n, err := NetworkOf(nil); err != nil || n.Filter.HTTPRules != nil || n.Filter.RefuseOpaqueTunnels || n.Filter.AmbiguousTarget != proxy.AmbiguousRefuse {
		t.Errorf("default filter %+v, %v", n.Filter, err)
	}
}
