package proxy

import (
	"strconv"
	"strings"
)

// NoProxy is the NO_PROXY value inside the sandbox: the sandbox's own
// loopback only. Inside the network namespace 127.0.0.1 is private to the
// sandbox (srt-notes §4.6), so these destinations never reach the host;
// anything else, private ranges included, goes through the proxy and its
// rules.
const NoProxy = "localhost,127.0.0.1,::1"

// Env returns the proxy environment of a sandboxed command, as "KEY=value"
// strings, for the proxies listening on 127.0.0.1:httpPort (HTTP) and
// 127.0.0.1:socksPort (SOCKS5) inside the sandbox (srt-notes §4.7, issue 3
// "Plumbing"). JAVA_TOOL_OPTIONS is not included because it must be
// merged with the inherited value: use MergeJavaToolOptions.
//
// Which client reads what, and why the values are what they are:
//
//   - The proxy address is the literal 127.0.0.1, not "localhost": the
//     relay may be bound to IPv4 only (no IPv6 on lo), and a client that
//     tries ::1 first would fail.
//   - curl and git (libcurl) read only the lower-case http_proxy (upper
//     case HTTP_PROXY is ignored for http:// because of "httpoxy"), and
//     either case of HTTPS_PROXY, ALL_PROXY and NO_PROXY; so both cases are
//     set for every variable.
//   - Go (net/http ProxyFromEnvironment) reads HTTP_PROXY, HTTPS_PROXY and
//     NO_PROXY, either case, and ignores ALL_PROXY.
//   - Python urllib, requests and pip read the *_PROXY variables, lower
//     case first; requests and pip need PySocks for a socks5h:// URL.
//   - httpx builds a transport for every proxy variable when a Client is
//     created and fails if one is socks5 and the socksio extra is missing.
//     That is why ALL_PROXY is the HTTP proxy (http://), not socks5h://,
//     as in the reference 0.0.83: every client that honours ALL_PROXY
//     can use an HTTP proxy through CONNECT.
//   - Node's fetch and http use the variables only with
//     NODE_USE_ENV_PROXY=1 (Node ≥ 22.21 / 24.5); npm reads HTTPS_PROXY
//     and HTTP_PROXY itself.
//   - gRPC C-core reads grpc_proxy, then https_proxy/http_proxy; grpc-go
//     reads HTTPS_PROXY.
//   - Docker's build and daemon-side pulls read DOCKER_HTTP(S)_PROXY.
//   - rsync sends an HTTP CONNECT to RSYNC_PROXY (host:port, no scheme),
//     so it names the HTTP proxy.
//   - FTP_PROXY names the SOCKS5 proxy with socks5h://, so curl sends the
//     name, not a locally resolved address (there is no DNS inside).
//   - Tools that only speak SOCKS (ssh via "nc -X 5") can use
//     127.0.0.1:socksPort directly; ssh through git uses the HTTP proxy
//     via GIT_SSH_COMMAND, set by the sandbox, not here.
func Env(httpPort, socksPort int) []string {
	httpURL := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	socksURL := "socks5h://127.0.0.1:" + strconv.Itoa(socksPort)
	var env []string
	both := func(name, value string) {
		env = append(env, name+"="+value, strings.ToLower(name)+"="+value)
	}
	both("HTTP_PROXY", httpURL)
	both("HTTPS_PROXY", httpURL)
	both("ALL_PROXY", httpURL)
	both("NO_PROXY", NoProxy)
	both("GRPC_PROXY", httpURL)
	both("FTP_PROXY", socksURL)
	env = append(env,
		"DOCKER_HTTP_PROXY="+httpURL,
		"DOCKER_HTTPS_PROXY="+httpURL,
		"RSYNC_PROXY=127.0.0.1:"+strconv.Itoa(httpPort),
		"NODE_USE_ENV_PROXY=1",
	)
	return env
}

// MergeJavaToolOptions returns the JAVA_TOOL_OPTIONS value for the
// sandbox: the inherited value (may be empty), followed by the JVM proxy
// system properties for the HTTP proxy on 127.0.0.1:httpPort
// (-Dhttp.proxyHost, -Dhttp.proxyPort, -Dhttps.proxyHost,
// -Dhttps.proxyPort). The JVM applies -D options in order and the last
// one wins, so appending keeps every inherited option while making sure
// ours are the proxy settings in force. The JVM's default
// http.nonProxyHosts (localhost|127.*|[::1]) already matches NoProxy.
// Calling it again on its own result adds nothing.
func MergeJavaToolOptions(inherited string, httpPort int) string {
	p := strconv.Itoa(httpPort)
	ours := "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + p +
		" -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + p
	inherited = strings.TrimSpace(inherited)
	switch {
	case inherited == "":
		return ours
	case strings.HasSuffix(inherited, ours):
		return inherited
	}
	return inherited + " " + ours
}

// TrustEnv returns the variables that point a sandboxed command's TLS
// clients at the trust bundle at bundlePath (the proxy's CA, the host's
// roots, network.tlsTerminate.extraCaCertPaths; mitm.TrustBundle), as
// "KEY=value" strings. Each replaces the tool's own trust configuration,
// which is why the bundle holds the host's roots too. The JVM reads no
// PEM bundle: see MergeJavaTrustStore.
//
//   - SSL_CERT_FILE: OpenSSL's default verify file (Python's ssl and
//     urllib, Ruby, PHP, wget, git with OpenSSL), Go's crypto/x509 on
//     Linux, Rust's openssl-probe and rustls-native-certs.
//   - NODE_EXTRA_CA_CERTS: Node, added to its bundled roots (read at
//     start-up only).
//   - CURL_CA_BUNDLE: curl and libcurl.
//   - GIT_SSL_CAINFO: git's http.sslCAInfo, whatever its TLS backend.
//   - REQUESTS_CA_BUNDLE: Python requests (which otherwise uses certifi).
//   - CARGO_HTTP_CAINFO: cargo's http.cainfo.
//   - AWS_CA_BUNDLE: the AWS CLI and SDKs.
//   - DENO_CERT: Deno.
//   - PIP_CERT: pip's --cert.
//   - NIX_SSL_CERT_FILE: Nix.
//   - HEX_CACERTS_PATH: Elixir's Hex.
//   - HTTPLIB2_CA_CERTS: Python httplib2 (Google's older API clients).
//   - GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: gRPC C-core (Python, Ruby, PHP
//     gRPC).
//   - CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE: the gcloud CLI.
//   - BUNDLE_SSL_CA_CERT: Ruby's Bundler.
//   - NPM_CONFIG_CAFILE: npm's cafile (which replaces Node's roots for
//     npm's own requests).
//
// A variable of the same name in the inherited environment is replaced,
// so that no client keeps trusting only the host's bundle.
func TrustEnv(bundlePath string) []string {
	names := []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
		"REQUESTS_CA_BUNDLE", "CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "DENO_CERT", "PIP_CERT",
		"NIX_SSL_CERT_FILE", "HEX_CACERTS_PATH", "HTTPLIB2_CA_CERTS", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
		"CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", "BUNDLE_SSL_CA_CERT", "NPM_CONFIG_CAFILE"}
	env := make([]string, len(names))
	for i, n := range names {
		env[i] = n + "=" + bundlePath
	}
	return env
}

// MergeJavaTrustStore returns the JAVA_TOOL_OPTIONS value inherited (may
// be empty) with the JVM trust store properties for the PKCS#12 store at
// storePath appended (-Djavax.net.ssl.trustStore, trustStoreType PKCS12,
// trustStorePassword password): the last -D wins, as in
// MergeJavaToolOptions. A path or password with a space cannot be
// expressed (the JVM splits the variable at spaces), so the value is
// returned unchanged for them. Calling it again on its own result adds
// nothing.
func MergeJavaTrustStore(inherited, storePath, password string) string {
	if strings.ContainsAny(storePath+password, " \t\n") {
		return inherited
	}
	ours := "-Djavax.net.ssl.trustStore=" + storePath + " -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=" + password
	inherited = strings.TrimSpace(inherited)
	switch {
	case inherited == "":
		return ours
	case strings.HasSuffix(inherited, ours):
		return inherited
	}
	return inherited + " " + ours
}

// ScrubEnv returns env ("KEY=value" strings) without what would carry
// the user's own proxy settings into the sandbox, credentials included
// (a corporate proxy's user:password@): every variable whose name ends in
// _PROXY, either case (PIP_PROXY, SOCKS_PROXY, YARN_HTTPS_PROXY,
// npm_config_https_proxy, GLOBAL_AGENT_HTTPS_PROXY, NO_PROXY …), and
// every variable whose value holds parent's user information (nil parent:
// none). Call it on the inherited environment before setting Env's
// variables, which then point every client at srt's own proxies.
func ScrubEnv(env []string, parent *Parent) []string {
	secrets := parent.userinfos()
	out := env[:0:0]
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		leak := false
		for _, s := range secrets {
			if strings.Contains(v, s) {
				leak = true
				break
			}
		}
		if !leak {
			out = append(out, kv)
		}
	}
	return out
}
