package settings

// Credentials is the top-level "credentials" object (reference 0.0.83
// "credentials"; issue 18): environment variables and files whose real
// values the sandboxed command must never read. mode "deny" withholds a
// value; mode "mask" shows a sentinel of the same shape inside the
// sandbox, and srt's proxy puts the real value back only in requests to
// the entry's injectHosts, over TLS srt terminated and verified upstream
// (unless AllowPlaintextInject).
type Credentials struct {
	// Files are credential files (credentials.files).
	Files []CredentialFile `json:"files,omitempty"`
	// EnvVars are credential environment variables (credentials.envVars).
	EnvVars []CredentialEnvVar `json:"envVars,omitempty"`
	// AllowPlaintextInject lets the proxy put a masked value back into a
	// request that travels in cleartext (plain HTTP).
	AllowPlaintextInject bool `json:"allowPlaintextInject,omitempty"`
	// AWSPairs link masked variables into AWS access-key pairs the proxy
	// re-signs SigV4 requests for (credentials.awsPairs). The
	// conventional AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
	// AWS_SESSION_TOKEN trio is paired without an entry.
	AWSPairs []AWSPair `json:"awsPairs,omitempty"`
	// SigV4 says what becomes of the SigV4 request shapes the proxy cannot
	// re-sign (credentials.sigv4).
	SigV4 SigV4 `json:"sigv4,omitempty"`
}

// Credential modes (credentials.files[].mode, credentials.envVars[].mode).
const (
	CredentialDeny = "deny"
	CredentialMask = "mask"
)

// What becomes of a masked entry whose extract (or decode) finds nothing
// (onExtractNoMatch). srt-go's default is "deny" (the reference's is
// "warn", which leaves the real value readable).
const (
	NoMatchDeny  = "deny"
	NoMatchWarn  = "warn"
	NoMatchError = "error"
)

// CredentialMasking is what a file entry and an environment entry share.
type CredentialMasking struct {
	// Mode is CredentialDeny or CredentialMask.
	Mode string `json:"mode"`
	// Extract, when set, is a regular expression (Go's RE2 syntax) whose
	// capture group 1 of each match is a secret: only those spans are
	// masked, the rest is shown as is.
	Extract string `json:"extract,omitempty"`
	// OnExtractNoMatch is NoMatchDeny (""), NoMatchWarn or NoMatchError.
	OnExtractNoMatch string `json:"onExtractNoMatch,omitempty"`
	// Decode is "" or "jwt": the value holds JSON Web Tokens, each masked
	// by a structurally valid fake.
	Decode string `json:"decode,omitempty"`
	// MaskClaims are the top-level payload claims masked in each token
	// (with Decode "jwt"); empty means the whole token.
	MaskClaims []string `json:"maskClaims,omitempty"`
	// InjectHosts are the domain patterns (allowedDomains grammar) the
	// real value may be sent to; nil means network.allowedDomains.
	InjectHosts []string `json:"injectHosts,omitempty"`
}

// CredentialFile is one credentials.files entry.
type CredentialFile struct {
	// Path is the file, absolute or "~/…".
	Path string `json:"path"`
	CredentialMasking
	// MaskDuplicates also masks every verbatim copy of an extracted value
	// outside the matched spans.
	MaskDuplicates bool `json:"maskDuplicates,omitempty"`
}

// CredentialEnvVar is one credentials.envVars entry.
type CredentialEnvVar struct {
	// Name is the variable's name.
	Name string `json:"name"`
	CredentialMasking
}

// AWSPair is one credentials.awsPairs entry: the names of the masked
// variables holding one AWS credential.
type AWSPair struct {
	AccessKeyIDVar     string `json:"accessKeyIdVar"`
	SecretAccessKeyVar string `json:"secretAccessKeyVar"`
	SessionTokenVar    string `json:"sessionTokenVar,omitempty"`
}

// SigV4 policies: "deny" ("", the default) answers 403; "passthrough"
// forwards the request without re-signing.
type SigV4 struct {
	Streaming string `json:"streaming,omitempty"`
	Presigned string `json:"presigned,omitempty"`
	SigV4A    string `json:"sigv4a,omitempty"`
}
