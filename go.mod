module github.com/srt-go/srt

go 1.26.8

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/cilium/ebpf v0.22.0
	github.com/coder/websocket v1.8.15
	github.com/creack/pty v1.1.24
	github.com/go-json-experiment/json v1.27.2
	github.com/hashicorp/yamux v0.1.2
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
	software.sslmate.com/src/go-pkcs12 v0.7.4
)

require (
	github.com/aws/smithy-go v1.28.9 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)
