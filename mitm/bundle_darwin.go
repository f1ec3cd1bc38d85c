package mitm

import (
	"context"
	"log/slog"
	"os/exec"
	"time"
)

// systemRoots returns the macOS system roots as PEM. Go's system pool on
// macOS asks the Security framework and cannot be exported, so the
// bundle takes them from `security find-certificate -a -p` on the
// system roots keychain (the roots every user trusts; administrator-added
// roots in the System keychain are not included: list them in
// extraCaCertPaths). hostRoots then adds /etc/ssl/cert.pem, the PEM copy
// macOS ships, when it exists. Failure is a debug log and no roots.
func systemRoots(ctx context.Context) []byte {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/security", "find-certificate", "-a", "-p",
		"/System/Library/Keychains/SystemRootCertificates.keychain").Output()
	if err != nil {
		slog.Debug("tlsTerminate: macOS system roots", "error", err)
		return nil
	}
	return certBlocks(out)
}
