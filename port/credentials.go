package port

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/policy"
)

// Credentials is Spec.Credentials (issue 18): environment variables whose
// real values the session's commands never see. Each exec's environment
// shows a mask entry's sentinel (credential.MaskValue) and never holds a
// deny entry; the session's proxy puts the real value back only into
// requests to the entry's injectHosts over TLS it terminated (a CA made
// for the session, trusted inside through proxy.TrustEnv's variables).
// Handle.Credentials echoes it with every value RedactedValue.
type Credentials = policy.SessionCredentials

// CredentialEnvVar is one Credentials.EnvVars entry.
type CredentialEnvVar = policy.SessionEnvVar

// RedactedValue replaces every credential value in a Handle.
const RedactedValue = policy.RedactedValue

// checkCredentials is Validate's part for spec.Credentials: the form of
// each entry (policy.CheckSessionCredentials), a *SpecError naming it.
func checkCredentials(c *Credentials) error {
	var fe *policy.FieldError
	if err := policy.CheckSessionCredentials(c); errors.As(err, &fe) {
		return &SpecError{fe.Field, fe.Reason}
	} else if err != nil {
		return err
	}
	return nil
}

// sessionCredentials compiles spec.Credentials for backend b against the
// session's egress rules: the Set its proxy substitutes with and the
// shown environment (name → sentinel) every exec starts from. Only the
// native backend on Linux terminates TLS in a session, so any other
// backend with credentials is ErrUnenforceable (422): a session must
// never run with a masked value it cannot inject, nor with the real one.
// An injectHosts entry the egress rules do not reach is a
// *policy.FieldError wrapping ErrUnenforceable (422, naming it).
func (rt *Runtime) sessionCredentials(spec Spec, b Backend) (*credential.Set, map[string]string, error) {
	if spec.Credentials == nil || len(spec.Credentials.EnvVars) == 0 {
		return nil, nil, nil
	}
	if b != BackendNative || runtime.GOOS != "linux" {
		return nil, nil, fmt.Errorf("%w: credentials: the %s backend on %s cannot mask credentials (it does not terminate the session's TLS, so a masked value could never be injected); use the native backend on Linux", ErrUnenforceable, b, runtime.GOOS)
	}
	egress, err := compileRules(EgressRules(rt.baseline, spec.NetworkEnabled, spec.EgressAllowlist))
	if err != nil {
		return nil, nil, fmt.Errorf("egress rules: %w", err)
	}
	return policy.CompileSessionCredentials(spec.Credentials, egress)
}
