// Package mitm is the certificate authority srt's proxies use to
// terminate TLS inside allowed CONNECT tunnels (network.tlsTerminate;
// seed 003 "Terminaison TLS"; issue 17): a CA, loaded from the operator's
// caCertPath/caKeyPath or made fresh for one run and never written to
// disk, the leaf certificates it mints per server name (ECDSA P-256, one
// key per CA, the most recently used names cached), and the trust bundle
// the sandboxed command is pointed at (the CA's certificate, the host's
// roots and the operator's extra CAs, CERTIFICATE blocks only).
//
// It runs in srt (or srtd), outside the sandbox. The CA's private key
// never leaves this process: nothing here writes it anywhere, and the
// policy read-denies a configured caKeyPath inside the sandbox.
package mitm
