package settings

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCredentials(t *testing.T) {
	s, err := Parse([]byte(`{"credentials": {
	  "files": [{"path": "~/.netrc", "mode": "mask", "extract": "password (\\S+)", "onExtractNoMatch": "warn", "maskDuplicates": true,
	             "injectHosts": ["api.example.com", "*.example.org:443"]},
	            {"path": "/etc/secret", "mode": "deny"}],
	  "envVars": [{"name": "AWS_ACCESS_KEY_ID", "mode": "mask"}, {"name": "K2", "mode": "mask"},
	              {"name": "TOKEN", "mode": "mask", "decode": "jwt", "maskClaims": ["sub"], "onExtractNoMatch": "error"},
	              {"name": "_X1", "mode": "deny", "injectHosts": null, "extract": null}],
	  "allowPlaintextInject": true,
	  "awsPairs": [{"accessKeyIdVar": "AWS_ACCESS_KEY_ID", "secretAccessKeyVar": "K2", "sessionTokenVar": null}],
	  "sigv4": {"streaming": "passthrough", "presigned": "deny", "sigv4a": null}}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	want := &Credentials{
		Files: []CredentialFile{
			{Path: "~/.netrc", MaskDuplicates: true, CredentialMasking: CredentialMasking{Mode: "mask", Extract: `password (\S+)`,
				OnExtractNoMatch: "warn", InjectHosts: []string{"api.example.com", "*.example.org:443"}}},
			{Path: "/etc/secret", CredentialMasking: CredentialMasking{Mode: "deny"}},
		},
		EnvVars: []CredentialEnvVar{
			{Name: "AWS_ACCESS_KEY_ID", CredentialMasking: CredentialMasking{Mode: "mask"}},
			{Name: "K2", CredentialMasking: CredentialMasking{Mode: "mask"}},
			{Name: "TOKEN", CredentialMasking: CredentialMasking{Mode: "mask", Decode: "jwt", MaskClaims: []string{"sub"}, OnExtractNoMatch: "error"}},
			{Name: "_X1", CredentialMasking: CredentialMasking{Mode: "deny"}},
		},
		AllowPlaintextInject: true,
		AWSPairs:             []AWSPair{{AccessKeyIDVar: "AWS_ACCESS_KEY_ID", SecretAccessKeyVar: "K2"}},
		SigV4:                SigV4{Streaming: "passthrough", Presigned: "deny"},
	}
	if !reflect.DeepEqual(s.Credentials, want) {
		t.Fatalf("Credentials =\n%+v\nwant\n%+v", s.Credentials, want)
	}
	// injectHosts: [] is kept as empty (inject nowhere), not read as absent.
	s, err = Parse([]byte(`{"credentials": {"envVars": [{"name": "A", "mode": "mask", "injectHosts": []}]}}`), "f.json")
	if err != nil || s.Credentials.EnvVars[0].InjectHosts == nil {
		t.Fatalf("injectHosts [] = %#v, %v", s.Credentials, err)
	}
	for _, in := range []string{`{}`, `{"credentials": null}`} {
		if s, err := Parse([]byte(in), "f.json"); err != nil || s.Credentials != nil {
			t.Fatalf("%s: %+v, %v; want nil", in, s.Credentials, err)
		}
	}
}

func TestCredentialsErrors(t *testing.T) {
	const ev = `{"credentials": {"envVars": [`
	const fl = `{"credentials": {"files": [`
	for _, tc := range []struct {
		in, path, msg string
		line, col     int
	}{
		{`{"credentials": true}`, "credentials", "expected an object", 1, 17},
		{`{"credentials": {"envVar": []}}`, "credentials", `did you mean "envVars"?`, 1, 18},
		{`{"credentials": {"files": {}}}`, "credentials.files", "expected an array", 1, 27},
		{fl + `"/x"]}}`, "credentials.files[0]", "expected an object", 1, 28},
		{ev + `{"name": "A"}]}}`, "credentials.envVars[0]", `missing key "mode"`, 1, 30},
		{ev + `{"name": "A", "mode": "hide"}]}}`, "credentials.envVars[0].mode", `"hide": want one of deny, mask`, 1, 52},
		{ev + `{"mode": "deny"}]}}`, "credentials.envVars[0]", `missing key "name"`, 1, 30},
		{ev + `{"name": "A-B", "mode": "deny"}]}}`, "credentials.envVars[0].name", "not an environment variable name", 1, 39},
		{ev + `{"name": "1A", "mode": "deny"}]}}`, "credentials.envVars[0].name", "not an environment variable name", 1, 39},
		{ev + `{"name": "", "mode": "deny"}]}}`, "credentials.envVars[0].name", "not an environment variable name", 1, 39},
		{ev + `{"name": "A", "mode": "deny"}, {"name": "A", "mode": "mask"}]}}`, "credentials.envVars[1].name", "also credentials.envVars[0]", 1, 70},
		{ev + `{"name": "A", "mode": "mask", "maskDuplicates": true}]}}`, "credentials.envVars[0]", `unknown key "maskDuplicates"`, 1, 60},
		{ev + `{"name": "A", "mode": "mask", "extract": "("}]}}`, "credentials.envVars[0].extract", "not a regular expression", 1, 71},
		{ev + `{"name": "A", "mode": "deny", "decode": "jwt"}]}}`, "credentials.envVars[0].decode", "only with", 1, 70},
		{ev + `{"name": "A", "mode": "mask", "extract": "ab+"}]}}`, "credentials.envVars[0].extract", "needs a capture group", 1, 71},
		{ev + `{"name": "A", "mode": "mask", "extract": 1}]}}`, "credentials.envVars[0].extract", "expected a string", 1, 71},
		{ev + `{"name": "A", "mode": "mask", "onExtractNoMatch": "ignore"}]}}`, "credentials.envVars[0].onExtractNoMatch", "want one of deny, warn, error", 1, 80},
		{ev + `{"name": "A", "mode": "mask", "decode": "base64"}]}}`, "credentials.envVars[0].decode", "want one of jwt", 1, 70},
		{ev + `{"name": "A", "mode": "mask", "maskClaims": ["sub"]}]}}`, "credentials.envVars[0].maskClaims", `needs "decode": "jwt"`, 1, 74},
		{ev + `{"name": "A", "mode": "mask", "decode": "jwt", "maskClaims": []}]}}`, "credentials.envVars[0].maskClaims", "empty", 1, 91},
		{ev + `{"name": "A", "mode": "mask", "decode": "jwt", "maskClaims": [""]}]}}`, "credentials.envVars[0].maskClaims[0]", "cannot be empty", 1, 91},
		{ev + `{"name": "A", "mode": "mask", "injectHosts": ["https://x.com"]}]}}`, "credentials.envVars[0].injectHosts[0]", "scheme", 1, 76},
		{ev + `{"name": "A", "mode": "mask", "injectHosts": "x.com"}]}}`, "credentials.envVars[0].injectHosts", "expected an array", 1, 75},
		{fl + `{"mode": "deny"}]}}`, "credentials.files[0]", `missing key "path"`, 1, 28},
		{fl + `{"path": "rel/x", "mode": "deny"}]}}`, "credentials.files[0].path", "must be an absolute path or start with ~/", 1, 37},
		{fl + `{"path": "~bob/x", "mode": "deny"}]}}`, "credentials.files[0].path", "must be an absolute path or start with ~/", 1, 37},
		{fl + `{"path": "/a/*.env", "mode": "deny"}]}}`, "credentials.files[0].path", "not a glob", 1, 37},
		{fl + `{"path": "/a\nb", "mode": "deny"}]}}`, "credentials.files[0].path", "control character", 1, 37},
		{fl + `{"path": "/a", "mode": "deny"}, {"path": "/a", "mode": "mask"}]}}`, "credentials.files[1].path", "also credentials.files[0]", 1, 69},
		{fl + `{"path": "/a", "mode": "deny", "name": "x"}]}}`, "credentials.files[0]", `unknown key "name"`, 1, 59},
		{fl + `{"path": "/a", "mode": "mask", "maskDuplicates": 1}]}}`, "credentials.files[0].maskDuplicates", "expected a boolean", 1, 77},
		{`{"credentials": {"allowPlaintextInject": "yes"}}`, "credentials.allowPlaintextInject", "expected a boolean", 1, 42},
		{`{"credentials": {"sigv4": {"streaming": "allow"}}}`, "credentials.sigv4.streaming", "want one of deny, passthrough", 1, 41},
		{`{"credentials": {"sigv4": {"sigV4a": "deny"}}}`, "credentials.sigv4", `did you mean "sigv4a"?`, 1, 28},
		{`{"credentials": {"awsPairs": [{"accessKeyIdVar": "A", "secretAccessKeyVar": "B"}]}}`, "credentials.awsPairs[0].accessKeyIdVar", "not a credentials.envVars entry", 1, 50},
		{`{"credentials": {"envVars": [{"name": "A", "mode": "mask"}, {"name": "B", "mode": "deny"}], "awsPairs": [{"accessKeyIdVar": "A", "secretAccessKeyVar": "B"}]}}`,
			"credentials.awsPairs[0].secretAccessKeyVar", `must be a "mask" entry without extract or decode`, 1, 152},
		{`{"credentials": {"awsPairs": [{"secretAccessKeyVar": null}]}}`, "credentials.awsPairs[0]", `missing key "accessKeyIdVar"`, 1, 31},
		{`{"credentials": {"awsPairs": [{"accessKeyId": "A"}]}}`, "credentials.awsPairs[0]", `did you mean "accessKeyIdVar"?`, 1, 32},
	} {
		_, err := Parse([]byte(tc.in), "f.json")
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v, want *Error", tc.in, err)
			continue
		}
		if e.File != "f.json" || e.Path != tc.path || e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s:\n got %s:%d:%d %q\nwant %s:%d:%d containing %q", tc.in, e.Path, e.Line, e.Column, e.Msg, tc.path, tc.line, tc.col, tc.msg)
		}
	}
}
