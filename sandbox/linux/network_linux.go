package linux

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/relay"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// This file runs in srt: the host side of the sandbox's network. PID 1's
// side is sandbox/linux/inside's listeners_linux.go.
//
// The sandbox's network: a network namespace with only lo, in which PID 1
// binds the proxy ports on the sandbox's own loopback and hands the
// listening sockets to srt over an inherited socket pair (SCM_RIGHTS).
// srt then serves its filtering proxies directly on them, from outside the
// sandbox: no relay process runs inside, no unix socket of the host is
// reachable from inside, and there is no credential to steal (the
// listeners exist only in this sandbox's network namespace, so no other
// process on the host can connect to them).
const (
	// HTTPProxyPort is the HTTP proxy's port on the sandbox's loopback,
	// as in the reference.
	HTTPProxyPort = wire.HTTPProxyPort
	// SOCKSProxyPort is the SOCKS5 proxy's port on the sandbox's loopback.
	SOCKSProxyPort = wire.SOCKSProxyPort
)

// sandboxListeners is what PID 1 binds: each proxy on every loopback
// address of the sandbox, then the relayed host loopback ports
// (loopback_linux.go).
func (n *network) sandboxListeners() []wire.ListenSpec {
	var out []wire.ListenSpec
	for _, l := range []struct {
		name string
		port int
	}{{wire.ListenerHTTP, HTTPProxyPort}, {wire.ListenerSOCKS5, SOCKSProxyPort}} {
		for _, a := range relay.LoopbackAddrs(l.port) {
			out = append(out, wire.ListenSpec{Name: l.name, Addr: a})
		}
	}
	return append(out, n.loopback...)
}

// network is the host side of one sandbox's egress.
type network struct {
	srv *proxy.Server
	// relay serves the relayed loopback ports, loopback what PID 1 binds
	// for it (fixed at start: later rules only refuse more of them).
	relay    *loopbackRelay
	loopback []wire.ListenSpec
	conn     *os.File // our end of the socket pair
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	log      *slog.Logger
	// external ports: the user's own proxies on the host's loopback.
	httpPort, socksPort int
}

// newNetwork starts the session's proxies (not yet listening) and returns
// it with the socket pair end to pass to PID 1.
func newNetwork(nw policy.Network, onViolation func(violation.Violation), lg *slog.Logger) (*network, *os.File, error) {
	srtd, err := ServerAddresses()
	if err != nil {
		return nil, nil, err
	}
	var term *proxy.Terminate
	if nw.TLS != nil {
		term = nw.TLS.Terminate
	}
	// The loopback relay refuses srtd's addresses and the parent proxy's;
	// the proxies get srtd's only, since they refuse the parent's as
	// destinations themselves and must still dial it as the parent.
	forbidden := func(ap netip.AddrPort) string {
		if why := srtd(ap); why != "" {
			return why
		}
		return nw.Parent.Forbidden(ap)
	}
	srv, err := proxy.New(proxy.Config{Policy: nw.Rules, OnViolation: onViolation, Logger: lg, Forbidden: srtd, MaxConns: nw.MaxConns, Parent: nw.Parent, Terminate: term, Filtering: nw.Filter, Credentials: nw.Credentials})
	if err != nil {
		return nil, nil, err
	}
	loopback, err := loopbackListeners(nw.Rules)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	n := &network{
		srv: srv, conn: os.NewFile(uintptr(fds[0]), "listeners"), log: lg,
		relay:    newLoopbackRelay(srv, forbidden, nw.MaxConns, onViolation, lg),
		loopback: loopback,
		httpPort: nw.HTTPProxyPort, socksPort: nw.SOCKSProxyPort,
	}
	return n, os.NewFile(uintptr(fds[1]), "listeners"), nil
}

// SetPolicy replaces the network rules for the running sandbox.
func (n *network) SetPolicy(p *netrule.Policy) { n.srv.SetPolicy(p) }

// serve receives the listening sockets from PID 1 and serves the proxies
// on them until close.
func (n *network) serve() {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		lns, err := recvListeners(n.conn)
		if err != nil {
			n.log.Debug("network", "error", err)
			return
		}
		for _, l := range lns {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				n.serveOne(ctx, l)
			}()
		}
	}()
}

type namedListener struct {
	name string
	ln   net.Listener
}

func (n *network) serveOne(ctx context.Context, l namedListener) {
	switch {
	case l.name == wire.ListenerLoopback:
		n.relay.serve(ctx, l.ln)
	case l.name == wire.ListenerHTTP && n.httpPort != 0:
		forward(ctx, l.ln, n.httpPort)
	case l.name == wire.ListenerSOCKS5 && n.socksPort != 0:
		forward(ctx, l.ln, n.socksPort)
	case l.name == wire.ListenerHTTP:
		n.srv.HTTP().Serve(ctx, l.ln)
	default:
		n.srv.SOCKS5().Serve(ctx, l.ln)
	}
}

// forward relays every connection to the user's own proxy on the host's
// loopback (network.httpProxyPort / socksProxyPort): that proxy does the
// filtering.
func forward(ctx context.Context, ln net.Listener, port int) {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			var d net.Dialer
			up, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				c.Close()
				return
			}
			relay.Pipe(c, up)
		}()
	}
}

func (n *network) close() {
	if n.cancel != nil {
		n.cancel()
	}
	n.conn.Close()
	n.srv.Close()
	n.wg.Wait()
}

// recvListeners reads the one message PID 1 sends (wire.RecvListeners)
// and makes a listener of each descriptor.
func recvListeners(conn *os.File) ([]namedListener, error) {
	names, fds, err := wire.RecvListeners(conn)
	if err != nil {
		return nil, err
	}
	var out []namedListener
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), names[i])
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			continue
		}
		out = append(out, namedListener{names[i], ln})
	}
	return out, nil
}

// proxyEnv is the environment that points clients at the proxies, and
// GIT_SSH_COMMAND, which sends ssh through the HTTP proxy with srt's own
// binary as its ProxyCommand. The user's own proxy variables, and any
// value holding parent's credentials, are dropped first
// (proxy.ScrubEnv).
func proxyEnv(env []string, srtPath string, parent *proxy.Parent) []string {
	env = proxy.ScrubEnv(env, parent)
	for _, kv := range proxy.Env(HTTPProxyPort, SOCKSProxyPort) {
		k, v, _ := cutKV(kv)
		env = envlist.Set(env, k, v)
	}
	java := proxy.MergeJavaToolOptions(getEnv(env, "JAVA_TOOL_OPTIONS"), HTTPProxyPort)
	env = envlist.Set(env, "JAVA_TOOL_OPTIONS", java)
	if srtPath != "" {
		env = envlist.Set(env, "GIT_SSH_COMMAND", fmt.Sprintf(`ssh -o ProxyCommand="%s %s %%h %%p"`, shellQuote(srtPath), wire.ProxyConnectArg))
	}
	return env
}

// Where the sandbox finds the trust files of network.tlsTerminate, below
// its private TMPDIR (fsplan.Options.TmpDir). They are bubblewrap
// --ro-bind-data mounts of sealed memfds, so no host path holds them
// (nothing for another local user to swap, nothing left behind), and the
// command can neither change nor replace them: a mount point cannot be
// unlinked or renamed (EBUSY). The host view binds / read-only, so the
// only places bubblewrap can create a mount point in are the tmpfs the
// plan mounts; the private TMPDIR is the one every run has. Dot names,
// so that a `rm -rf "$TMPDIR"/*` passes them by.
const (
	trustBundleName = ".srt-ca-bundle.pem"
	trustStoreName  = ".srt-ca-truststore.p12"
)

// trustFiles returns the bubblewrap options that show tls's bundle and
// JVM trust store in the sandbox's TMPDIR tmpdir (after the plan's own
// options: the TMPDIR tmpfs must be mounted first), each memfd passed
// with addFD, and env with the trust variables set (proxy.TrustEnv,
// proxy.MergeJavaTrustStore). A nil tls returns nothing and env as is.
func trustFiles(tls *policy.TLS, tmpdir string, env []string, addFD func(*os.File) int) ([]string, []string, error) {
	if tls == nil {
		return nil, env, nil
	}
	if tmpdir == "" {
		return nil, nil, fmt.Errorf("network.tlsTerminate: the sandbox has no private TMPDIR to show the trust bundle in")
	}
	var args []string
	for _, f := range []struct {
		name string
		data []byte
	}{{trustBundleName, tls.Bundle}, {trustStoreName, tls.TrustStore}} {
		mf, err := memfile("srt-"+f.name[1:], f.data)
		if err != nil {
			return nil, nil, fmt.Errorf("network.tlsTerminate: %s: %w", f.name, err)
		}
		args = append(args, "--perms", "0444", "--ro-bind-data", strconv.Itoa(addFD(mf)), filepath.Join(tmpdir, f.name))
	}
	bundle := filepath.Join(tmpdir, trustBundleName)
	for _, kv := range proxy.TrustEnv(bundle) {
		k, v, _ := cutKV(kv)
		env = envlist.Set(env, k, v)
	}
	java := proxy.MergeJavaTrustStore(getEnv(env, "JAVA_TOOL_OPTIONS"), filepath.Join(tmpdir, trustStoreName), mitm.TrustStorePassword)
	return args, envlist.Set(env, "JAVA_TOOL_OPTIONS", java), nil
}

func cutKV(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

func getEnv(env []string, k string) string {
	for _, kv := range env {
		if kk, v, _ := cutKV(kv); kk == k {
			return v
		}
	}
	return ""
}

// shellQuote quotes s for sh(1) with single quotes.
func shellQuote(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, `'\''`...)
		} else {
			out = append(out, s[i])
		}
	}
	return string(append(out, '\''))
}
