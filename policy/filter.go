package policy

import (
	"fmt"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/settings"
)

// filterOf compiles the request-filtering keys of a settings network
// object (network.httpRules, refuseOpaqueTunnels, ambiguousRequestTarget,
// stripResponseHeaders) into what srt's proxies enforce. settings has
// checked them; an error here means a value built without it.
func filterOf(n settings.Network) (proxy.Filtering, error) {
	var f proxy.Filtering
	var err error
	if f.AmbiguousTarget, err = proxy.ParseAmbiguousTarget(n.AmbiguousRequestTarget); err != nil {
		return f, &KeyError{"network.ambiguousRequestTarget", err}
	}
	f.RefuseOpaqueTunnels = n.RefuseOpaqueTunnels
	f.StripResponseHeaders = n.StripResponseHeaders
	rules := make([]proxy.HTTPRule, 0, len(n.HTTPRules))
	for i, r := range n.HTTPRules {
		name := fmt.Sprintf("network.httpRules[%d]", i)
		hr := proxy.HTTPRule{Name: name, Methods: r.Methods, Paths: r.Paths}
		for j, d := range r.Domains {
			p, err := netrule.ParsePattern(d, false)
			if err != nil {
				return f, &KeyError{fmt.Sprintf("%s.domains[%d]", name, j), err}
			}
			hr.Domains = append(hr.Domains, p)
		}
		rules = append(rules, hr)
	}
	f.HTTPRules = proxy.NewHTTPRules(rules)
	return f, nil
}
