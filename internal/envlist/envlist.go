// Package envlist edits environments in os/exec's form, "KEY=value"
// strings, for every process srt starts (the sandbox's command, its
// exec agent's commands, backend none's and macOS's).
package envlist

import "strings"

// Set returns env with every KEY=… entry for k removed and k=v appended
// last. env is not modified.
func Set(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}
