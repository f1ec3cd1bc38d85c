package settings

// The settings objects' keys, in one place: the parser's known-key lists
// (its "unknown key" errors and "did you mean" suggestions) and the JSON
// Schema (Schema, srt-settings.schema.json) are both made from these
// tables. Each key's description is its Go field's doc comment, in one
// line. TestSchemaKeys checks that every key a checker's switch accepts
// is in the table its "unknown key" error names, and back.

// A shape is the JSON Schema (draft 2020-12) of one value, as a map that
// encoding/json writes with its keys sorted.
type shape = map[string]any

// key is one known key of a settings object.
type key struct {
	name  string
	doc   string // one line
	shape shape
}

// object is one settings object: its keys, in the order messages list
// them, and those it cannot do without.
type object struct {
	keys     []key
	required []string
}

// names lists o's keys in order.
func (o object) names() []string {
	out := make([]string, len(o.keys))
	for i, k := range o.keys {
		out[i] = k.name
	}
	return out
}

// with returns o with more keys after its own.
func (o object) with(more object) object {
	return object{keys: append(append([]key(nil), o.keys...), more.keys...), required: append(append([]string(nil), o.required...), more.required...)}
}

// Shapes. The parser reads null as "absent" for most keys; nullable says
// so in the schema.
func boolean() shape            { return nullable(shape{"type": "boolean"}) }
func str() shape                { return shape{"type": "string"} }
func strList() shape            { return nullable(arrayOf(str())) }
func arrayOf(items shape) shape { return shape{"type": "array", "items": items} }
func enum(values ...string) shape {
	return shape{"type": "string", "enum": values}
}
func integer(lo, hi int) shape {
	return nullable(shape{"type": "integer", "minimum": lo, "maximum": hi})
}
func mapOf(values shape) shape {
	return nullable(shape{"type": "object", "additionalProperties": values})
}

// nullable adds null to the values s accepts.
func nullable(s shape) shape {
	out := shape{}
	for k, v := range s {
		out[k] = v
	}
	switch t := s["type"].(type) {
	case string:
		out["type"] = []string{t, "null"}
	}
	if e, ok := s["enum"].([]string); ok {
		vals := make([]any, 0, len(e)+1)
		for _, v := range e {
			vals = append(vals, v)
		}
		out["enum"] = append(vals, nil)
	}
	return out
}

// ignoredKey is a key of the reference's that srt-go accepts and ignores
// (its own helpers); its value may be anything.
func ignoredKey(name string) key {
	return key{name, "The reference srt's own helper setting; accepted and ignored by srt-go.", shape{}}
}

// unsupportedKey is a security setting of the reference's that srt-go
// does not implement: only null (absent) is accepted.
func unsupportedKey(name string) key {
	return key{name, "Not supported by srt-go: srt refuses to run rather than ignore a security setting (null is accepted).", shape{"type": "null"}}
}

// pathEntry is a filesystem rule's path: a string, or an object.
var pathEntryObject = object{
	keys: []key{
		{"path", "The path: absolute, \"~\", \"~/...\" or relative to the working directory; a glob unless literal.", shape{"type": "string", "minLength": 1}},
		{"literal", "Take the path as it is spelled: *, ?, [ and { are not glob characters.", boolean()},
	},
	required: []string{"path"},
}

func pathList() shape {
	return nullable(arrayOf(shape{"anyOf": []any{
		shape{"type": "string", "minLength": 1},
		objectOf(pathEntryObject),
	}}))
}

var filesystemObject = object{keys: []key{
	{"denyRead", "Paths (or globs) that cannot be read.", pathList()},
	{"allowRead", "Paths re-opened inside a denyRead area; a more specific denyRead entry still wins.", pathList()},
	{"allowWrite", "The only paths that can be written (besides the default write paths).", pathList()},
	{"denyWrite", "Read-only holes in allowWrite; always wins.", pathList()},
	{"allowGitConfig", "Make .git/config writable; hooks stay protected.", boolean()},
	{"disabled", "Turn the filesystem policy off entirely (no mandatory denies either).", boolean()},
	{"enforceNamesAtCreation", "srt-go: enforce write-deny globs and mandatory names at any depth when a name is created (default: on where the host can).", boolean()},
}}

var gitObject = object{keys: []key{
	{"safeDirectories", "Passed to git as safe.directory values.", strList()},
}}

var parentProxyObject = object{keys: []key{
	{"http", "Parent proxy URL for plain-HTTP requests (http://host:port).", nullable(str())},
	{"https", "Parent proxy URL for CONNECT tunnels and SOCKS5 connections; defaults to http.", nullable(str())},
	{"noProxy", "NO_PROXY list: a comma-separated string or an array of entries.", shape{"type": []string{"string", "array", "null"}, "items": str()}},
}}

var tlsTerminateObject = object{keys: []key{
	{"excludeDomains", "Domain patterns whose CONNECTs are tunnelled opaquely (mTLS, pinning).", strList()},
	{"extraCaCertPaths", "PEM files (absolute or ~/...) added to the sandbox's trust bundle and the proxy's.", nullable(arrayOf(shape{"type": "string", "pattern": "^(/|~/)"}))},
	{"caCertPath", "The operator's CA certificate (absolute or ~/...); with caKeyPath, else an ephemeral CA per run.", nullable(shape{"type": "string", "pattern": "^(/|~/)"})},
	{"caKeyPath", "The operator's CA key (absolute or ~/...); read-denied inside the sandbox.", nullable(shape{"type": "string", "pattern": "^(/|~/)"})},
	{"maxTunnels", "Tunnels terminated at once, 1..65536 (default 256).", integer(1, 65536)},
	{"handshakeTimeoutMs", "Milliseconds from a CONNECT to the end of the client's TLS handshake, 100..600000 (default 10000).", integer(100, 600000)},
}}

var mitmProxyObject = object{
	keys: []key{
		{"socketPath", "The MITM proxy's unix socket: an absolute, clean path.", shape{"type": "string", "pattern": "^/"}},
		{"domains", "Domain patterns whose connections go through the MITM proxy; at least one.", shape{"type": "array", "items": str(), "minItems": 1}},
	},
	required: []string{"socketPath", "domains"},
}

var httpRuleObject = object{
	keys: []key{
		{"domains", "The hosts (allowedDomains syntax; \":port\" restricts to a port); at least one.", shape{"type": "array", "items": str(), "minItems": 1}},
		{"methods", "Allowed methods, upper-case (\"GET\"); absent allows every method, [] is an error.", nullable(shape{"type": "array", "items": shape{"type": "string", "pattern": "^[!#$%&'*+.^_`|~0-9A-Z-]+$"}, "minItems": 1})},
		{"paths", "Allowed path prefixes, each starting with \"/\"; absent allows every path, [] is an error.", nullable(shape{"type": "array", "items": shape{"type": "string", "pattern": "^/"}, "minItems": 1})},
	},
	required: []string{"domains"},
}

var networkObject = object{keys: []key{
	{"allowedDomains", "The egress allow-list of domain patterns; empty means no network.", strList()},
	{"deniedDomains", "Domain patterns checked before allowedDomains; they win over it.", strList()},
	{"deniedDomainReasons", "Maps an exact deniedDomains entry to the reason reported when it refuses a connection.", mapOf(str())},
	{"allowlistDenyReason", "The reason reported for hosts not on the allow-list.", nullable(str())},
	{"strictAllowlist", "Hosts not on the allow-list are denied without asking.", boolean()},
	{"deniedResolvedAddresses", "Extra IP addresses or CIDR prefixes allowed host names must not resolve to.", strList()},
	{"allowUnixSockets", "macOS only: unix socket paths the command may connect to.", strList()},
	{"allowAllUnixSockets", "Turn off the seccomp AF_UNIX rule on Linux.", boolean()},
	{"allowLocalBinding", "macOS only; on Linux the sandbox's loopback is private and binding is always allowed.", boolean()},
	{"allowMachLookup", "macOS only: Mach service names the command may look up.", strList()},
	{"httpProxyPort", "A user-run HTTP proxy on the host's loopback, used instead of srt's own.", integer(1, 65535)},
	{"socksProxyPort", "A user-run SOCKS5 proxy on the host's loopback, used instead of srt's own.", integer(1, 65535)},
	{"tlsTerminate", "Terminate TLS in allowed CONNECT tunnels ({} for every default).", nullable(objectOf(tlsTerminateObject))},
	{"mitmProxy", "Send the connections to some domains through an HTTP proxy on a unix socket.", nullable(objectOf(mitmProxyObject))},
	{"parentProxy", "The upstream proxy srt's own proxies connect through.", nullable(objectOf(parentProxyObject))},
	unsupportedKey("filterRequest"),
	unsupportedKey("allowPlaintextHeaderSet"),
	{"stripResponseHeaders", "Response headers never passed back to the sandbox.", nullable(arrayOf(shape{"type": "string", "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"}))},
	{"refuseOpaqueTunnels", "Refuse every tunnel srt cannot see into (SOCKS5, CONNECT not TLS-terminated).", boolean()},
	{"requireHostMatch", "Inside a terminated tunnel, TLS server name, CONNECT target and Host must agree (default: on when terminating).", boolean()},
	{"ambiguousRequestTarget", "What becomes of a filtered request whose target normalises to another path (default refuse).", nullable(enum(ambiguousTargetValues...))},
	{"httpRules", "srt-go: per-host method and path rules.", nullable(arrayOf(objectOf(httpRuleObject)))},
}}

var maskingObject = object{keys: []key{
	{"mode", "deny withholds the value; mask shows a same-shaped sentinel, put back by the proxy for injectHosts.", enum(credModes...)},
	{"extract", "A regular expression (RE2) whose capture group 1 of each match is a secret; only those spans are masked.", nullable(str())},
	{"onExtractNoMatch", "When extract or decode finds nothing: deny (default), warn or error.", nullable(enum(noMatchModes...))},
	{"decode", "\"jwt\": the value holds JSON Web Tokens, each masked by a structurally valid fake.", nullable(enum("jwt"))},
	{"maskClaims", "With decode jwt: the payload claims masked in each token (absent: the whole token).", nullable(shape{"type": "array", "items": shape{"type": "string", "minLength": 1}, "minItems": 1})},
	{"injectHosts", "Domain patterns the real value may be sent to (default: network.allowedDomains).", strList()},
}, required: []string{"mode"}}

var credFileObject = object{keys: []key{
	{"path", "The credential file: absolute or ~/..., not a glob.", shape{"type": "string", "pattern": "^(/|~/)"}},
	{"maskDuplicates", "Also mask every verbatim copy of an extracted value outside the matched spans.", boolean()},
}, required: []string{"path"}}.with(maskingObject)

var credEnvObject = object{keys: []key{
	{"name", "The environment variable's name.", shape{"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
}, required: []string{"name"}}.with(maskingObject)

var awsPairObject = object{keys: []key{
	{"accessKeyIdVar", "The masked variable holding the access key ID.", str()},
	{"secretAccessKeyVar", "The masked variable holding the secret access key.", str()},
	{"sessionTokenVar", "The masked variable holding the session token, if any.", nullable(str())},
}, required: []string{"accessKeyIdVar", "secretAccessKeyVar"}}

var sigv4Object = object{keys: []key{
	{"streaming", "Streaming SigV4 requests, which cannot be re-signed: deny (default, 403) or passthrough.", nullable(enum(sigv4Values...))},
	{"presigned", "Presigned SigV4 URLs: deny (default) or passthrough.", nullable(enum(sigv4Values...))},
	{"sigv4a", "SigV4A requests: deny (default) or passthrough.", nullable(enum(sigv4Values...))},
}}

var credentialsObject = object{keys: []key{
	{"files", "Credential files whose contents the command must not read in clear.", nullable(arrayOf(objectOf(credFileObject)))},
	{"envVars", "Credential environment variables whose values the command must not read in clear.", nullable(arrayOf(objectOf(credEnvObject)))},
	{"allowPlaintextInject", "Let the proxy put a masked value back into a plain-HTTP request.", boolean()},
	{"awsPairs", "Masked variables forming AWS access-key pairs the proxy re-signs SigV4 requests for.", nullable(arrayOf(objectOf(awsPairObject)))},
	{"sigv4", "What becomes of the SigV4 request shapes the proxy cannot re-sign.", nullable(objectOf(sigv4Object))},
}}

var topObject = object{keys: []key{
	{"network", "Egress rules enforced by the per-session proxies.", nullable(objectOf(networkObject))},
	{"filesystem", "Read and write rules enforced by the bind mounts.", nullable(objectOf(filesystemObject))},
	{"ignoreViolations", "Maps a command pattern (\"*\" or a substring) to substrings of violation lines not reported; reporting only.", mapOf(nullable(arrayOf(str())))},
	{"enableWeakerNestedSandbox", "Run where a fresh /proc cannot be mounted (unprivileged containers), with weaker isolation.", boolean()},
	{"allowNestedUserNamespaces", "Let the command create user namespaces (browsers, rootless podman, nested bwrap).", boolean()},
	{"enableWeakerNetworkIsolation", "macOS only (trustd.agent lookups).", boolean()},
	{"allowAppleEvents", "macOS only.", boolean()},
	{"mandatoryDenySearchDepth", "Directory levels below the working directory searched for mandatory write-denies, 1..10 (default 3).", integer(1, 10)},
	{"allowPty", "macOS only; on Linux the command always gets its own terminal when srt runs in one.", boolean()},
	{"bwrapPath", "Absolute path to bubblewrap (default: bwrap in PATH).", nullable(shape{"type": "string", "pattern": "^/"})},
	{"git", "git-specific settings.", nullable(objectOf(gitObject))},
	{"credentials", "Secrets the command must not read in clear: denied, or masked and re-injected by the proxy.", nullable(objectOf(credentialsObject))},
	ignoredKey("ripgrep"),
	ignoredKey("socatPath"),
	ignoredKey("seccomp"),
	ignoredKey("javaAgentJarPath"),
	ignoredKey("windows"),
	{"$schema", "The JSON Schema this file follows, for editors; srt ignores it.", nullable(str())},
}}

// The known-key lists the checkers' "unknown key" errors name.
var (
	topKeys          = topObject.names()
	networkKeys      = networkObject.names()
	filesystemKeys   = filesystemObject.names()
	gitKeys          = gitObject.names()
	pathEntryKeys    = pathEntryObject.names()
	credentialsKeys  = credentialsObject.names()
	credFileKeys     = credFileObject.names()
	credEnvKeys      = credEnvObject.names()
	awsPairKeys      = awsPairObject.names()
	sigv4Keys        = sigv4Object.names()
	tlsTerminateKeys = tlsTerminateObject.names()
	mitmProxyKeys    = mitmProxyObject.names()
	parentProxyKeys  = parentProxyObject.names()
	httpRuleKeys     = httpRuleObject.names()
)

// objectOf is the schema of an object that accepts o's keys and no other,
// as the parser does (its "unknown key" errors).
func objectOf(o object) shape {
	props := shape{}
	for _, k := range o.keys {
		p := shape{}
		for n, v := range k.shape {
			p[n] = v
		}
		p["description"] = k.doc
		props[k.name] = p
	}
	s := shape{"type": "object", "properties": props, "additionalProperties": false}
	if len(o.required) > 0 {
		s["required"] = o.required
	}
	return s
}

// KeyDoc is one settings key with its one-line description.
type KeyDoc struct{ Name, Doc string }

// TopLevelKeys lists the settings file's top-level keys srt-go reads,
// with their descriptions (for the man page); the reference's helper
// keys it ignores are left out.
func TopLevelKeys() []KeyDoc {
	var out []KeyDoc
	for _, k := range topObject.keys {
		if len(k.shape) > 0 {
			out = append(out, KeyDoc{k.name, k.doc})
		}
	}
	return out
}
