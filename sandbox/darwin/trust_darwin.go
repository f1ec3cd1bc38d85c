package darwin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/proxy"
)

// trustFiles writes tls's trust bundle and JVM trust store into the
// session directory dir and returns env with the trust variables set
// (proxy.TrustEnv, proxy.MergeJavaTrustStore). dir is srt's own (mode
// 0700, in the user's private temporary directory, not a world-writable
// path), outside the profile's write roots: the command can read the
// files, not change or replace them, and they go with the session
// directory at the end.
func trustFiles(tls *policy.TLS, dir string, env []string) ([]string, error) {
	bundle, store := filepath.Join(dir, "ca-bundle.pem"), filepath.Join(dir, "ca-truststore.p12")
	if err := os.WriteFile(bundle, tls.Bundle, 0o444); err != nil {
		return nil, fmt.Errorf("network.tlsTerminate: trust bundle: %w", err)
	}
	if err := os.WriteFile(store, tls.TrustStore, 0o444); err != nil {
		return nil, fmt.Errorf("network.tlsTerminate: JVM trust store: %w", err)
	}
	for _, kv := range proxy.TrustEnv(bundle) {
		k, v, _ := strings.Cut(kv, "=")
		env = envlist.Set(env, k, v)
	}
	return envlist.Set(env, "JAVA_TOOL_OPTIONS", proxy.MergeJavaTrustStore(getEnv(env, "JAVA_TOOL_OPTIONS"), store, mitm.TrustStorePassword)), nil
}
