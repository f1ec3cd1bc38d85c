package port

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/srt-go/srt/sandbox/linux"
)

// probeNative: Linux and WSL2 offer the native backend when bubblewrap is
// installed and can create its namespaces (seed 000, "Sonde"). It runs
// bubblewrap once (linux.Check) rather than trusting sysctls alone.
// socat, which the reference needs, is not: srt's proxies reach the
// sandbox through descriptors handed over by its PID 1.
func probeNative(ctx context.Context, bwrapPath string) Probe {
	p := Probe{Platform: "linux"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		if r := strings.ToLower(string(b)); strings.Contains(r, "microsoft") || strings.Contains(r, "wsl") {
			p.Platform = "wsl2"
		}
	}
	bwrap, err := linux.FindBwrap(bwrapPath)
	if err != nil {
		p.Note = err.Error()
		if errors.Is(err, linux.ErrNoBwrap) {
			p.RequiresInstall = true
			p.InstallHint = "install bubblewrap: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora), sudo pacman -S bubblewrap (Arch)"
		}
		return p
	}
	if err := linux.CheckUserNamespaces(); err != nil {
		p.Note = err.Error()
		p.InstallHint = err.Error()
		return p
	}
	for _, g := range linux.Check(ctx, bwrap) {
		if !g.OK && g.Name != "Landlock" {
			p.Note = g.Name + ": " + g.Detail
			p.InstallHint = p.Note
			return p
		}
	}
	p.Available = true
	p.Note = "bubblewrap (" + bwrap + ") — namespace isolation, no kernel boundary"
	return p
}
