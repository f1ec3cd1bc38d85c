package server

import "github.com/srt-go/srt/port"

// StartupLine is srtd's one start-up log line (seed 000, "Résultats de la
// sonde"): "agent sandbox ON <note>", "no OS-native agent sandbox on this
// host <hint>", or "agent sandbox DISABLED by --sandbox off".
func StartupLine(sandboxOn bool, p port.Probe) string {
	switch {
	case !sandboxOn:
		return "agent sandbox DISABLED by --sandbox off"
	case p.Available:
		return "agent sandbox ON " + p.Note
	}
	hint := p.InstallHint
	if hint == "" {
		hint = p.Note
	}
	return "no OS-native agent sandbox on this host " + hint
}
