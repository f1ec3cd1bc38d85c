package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/settings"
)

func sessionVar(name, mode, value string, hosts ...string) SessionEnvVar {
	return SessionEnvVar{CredentialEnvVar: settings.CredentialEnvVar{Name: name,
		CredentialMasking: settings.CredentialMasking{Mode: mode, InjectHosts: hosts}}, Value: value}
}

func TestCheckSessionCredentials(t *testing.T) {
	for _, tc := range []struct {
		c     SessionCredentials
		field string
	}{
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A=B", "mask", "v")}}, "credentials.envVars[0].name"},
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A", "show", "v")}}, "credentials.envVars[0].mode"},
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A", "mask", "")}}, "credentials.envVars[0].value"},
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A", "mask", "v", "h.example"), sessionVar("A", "deny", "")}}, "credentials.envVars[1].name"},
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A", "mask", "v")}}, "credentials.envVars[0].injectHosts"},
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A", "mask", "v", "*")}}, "credentials.envVars[0].injectHosts[0]"},
		{SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("A", "mask", "v", "api.github.com")}}, ""},
	} {
		err := CheckSessionCredentials(&tc.c)
		var fe *FieldError
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.c, err)
			}
			continue
		}
		if !errors.As(err, &fe) || fe.Field != tc.field || errors.Is(err, ErrUnenforceable) {
			t.Errorf("%+v: %v, want a FieldError for %s", tc.c, err, tc.field)
		}
	}
}

func TestCompileSessionCredentials(t *testing.T) {
	egress, err := netrule.Compile(netrule.Rules{Allowed: []string{"api.github.com", "*.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	const real = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	c := &SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("GH_TOKEN", "mask", real, "api.github.com", "*.example.com"), sessionVar("NPM_TOKEN", "deny", "")}}
	set, shown, err := CompileSessionCredentials(c, egress)
	if err != nil {
		t.Fatal(err)
	}
	if s := shown["GH_TOKEN"]; s == "" || s == real {
		t.Fatalf("shown %q", s)
	}
	env := set.Environ([]string{"GH_TOKEN=x", "NPM_TOKEN=y", "COPY=" + real})
	if strings.Contains(strings.Join(env, "\n"), real) || len(env) != 2 {
		t.Errorf("Environ: %q", env)
	}
	if set.Egress("api.github.com", 443, true) == nil || set.Egress("other.org", 443, true) != nil || set.Egress("api.github.com", 80, false) != nil {
		t.Error("Egress: the real value must go to the inject hosts only, over verified TLS only")
	}
	if r := c.Redacted(); r.EnvVars[0].Value != RedactedValue || r.EnvVars[1].Value != "" || c.EnvVars[0].Value != real {
		t.Errorf("Redacted: %+v (original %+v)", r, c)
	}
	bad := &SessionCredentials{EnvVars: []SessionEnvVar{sessionVar("GH_TOKEN", "mask", real, "api.github.com", "unreachable.org")}}
	var fe *FieldError
	if _, _, err := CompileSessionCredentials(bad, egress); !errors.As(err, &fe) || fe.Field != "credentials.envVars[0].injectHosts[1]" || !errors.Is(err, ErrUnenforceable) || strings.Contains(err.Error(), real) {
		t.Errorf("unreachable inject host: %v", err)
	}
}
