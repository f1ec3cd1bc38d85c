package port

import (
	"os"
	"slices"
	"strings"

	"github.com/srt-go/srt/internal/envlist"
)

// EnvAllowList are the host variables a launched process inherits (seed
// 000: "environnement assaini"): ordinary settings only, never the
// server's tokens or keys. LC_* variables are kept too. Everything else of
// the server's environment is dropped; ExecRequest.Env adds to this. srtd's
// terminals start from the same list (server/terminal_profile.go).
var EnvAllowList = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "TZ"}

// defaultPath is PATH when the server has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// SanitizedEnv returns the allow-listed variables of host (a list of
// "K=V", as os.Environ), in a stable order, then extra (which overrides).
func SanitizedEnv(host []string, extra map[string]string) []string {
	var out []string
	for _, kv := range host {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if slices.Contains(EnvAllowList, k) || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
		}
	}
	if !slices.ContainsFunc(out, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		out = append(out, "PATH="+defaultPath)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = envlist.Set(out, k, extra[k])
	}
	slices.Sort(out)
	return out
}

func hostEnv() []string { return os.Environ() }
