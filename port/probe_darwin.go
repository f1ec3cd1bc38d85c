package port

import (
	"context"
	"os"
)

// probeNative: macOS offers Seatbelt through /usr/bin/sandbox-exec, present
// on every installation (seed 000, "Sonde").
func probeNative(ctx context.Context, _ string) Probe {
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
		return Probe{Platform: "darwin", Note: "/usr/bin/sandbox-exec is missing: " + err.Error()}
	}
	return Probe{Platform: "darwin", Available: true, Note: "sandbox-exec (Seatbelt) — namespace isolation, no kernel boundary"}
}
