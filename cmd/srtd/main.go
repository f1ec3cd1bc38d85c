// Command srtd serves the sandbox port (issue 6) over HTTP on loopback:
//
//	srtd [--addr 127.0.0.1:PORT] [--token-file PATH] [--sandbox on|off] [--microvm auto|off]
//	     [--memory-limit default|off|SIZE] [--cgroup-parent DIR]
//
// It probes the host once, prints one start-up line (agent sandbox
// ON …, no OS-native agent sandbox on this host …, or agent sandbox
// DISABLED by --sandbox off) and the web console's line (its login URL,
// or why it is off), writes a new bearer token to the token file
// (mode 0600) and serves the API of package server until SIGTERM or
// SIGINT, which destroy every sandbox and terminal before it exits.
//
// The microvm backend (issue 7) is probed at start-up with a test boot
// (seconds under TCG, well under a second with KVM) unless --microvm off
// or SRTD_MICROVM=off. srtd does not wait for it: it serves at once, its
// start-up line says microvm=probing, and one more line, "microvm probe",
// gives the verdict once it is known (GET /v1/probe's microvmState says
// probing meanwhile; a microvm launch waits for the verdict). A verdict
// known at once (--microvm off, --sandbox off) is on the start-up line
// itself. Its guest /init is srtd itself when built static
// (CGO_ENABLED=0), else SRT_MICROVM_INIT (a static srt); QEMU is
// qemu-system-x86_64 in PATH, else SRT_MICROVM_QEMU.
//
// Exit status: 0 after a signal, 2 for a usage error, 1 otherwise.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/internal/peeruid"
	"github.com/srt-go/srt/microvm/guest"
	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/sandbox"
	"github.com/srt-go/srt/server"
	"github.com/srt-go/srt/server/console"
	"golang.org/x/net/netutil"
)

func main() {
	// First: srtd is also, for the sandboxes it starts, their PID 1,
	// placeholder guardian, Landlock stage and ssh's ProxyCommand.
	sandbox.Main()
	// Built static (CGO_ENABLED=0), srtd is the microvm guest's /init too.
	if guest.IsInit() {
		guest.Main()
	}
	// Inside the guest, /.srt/bin/srt-guest is this binary: the guest's
	// diagnostic tools (fetch, dial).
	if filepath.Base(os.Args[0]) == "srt-guest" {
		if st, ok := guest.Tool(os.Args[1:]); ok {
			os.Exit(st)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type usageError struct{ error }

func run(args []string, stdout, stderr io.Writer) int {
	err := serve(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "srtd: %v (see srtd --help)\n", err)
		return 2
	}
	fmt.Fprintln(stderr, "srtd:", err)
	return 1
}

func serve(args []string, stdout, stderr io.Writer) error {
	fs, f := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 2 && fs.Arg(0) == "completion" {
		*f.completion = fs.Arg(1) // "srtd completion bash", as --completion bash
	} else if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	switch {
	case *f.help || *f.h:
		fmt.Fprint(stdout, program.Help())
		return nil
	case *f.man:
		fmt.Fprint(stdout, program.Man())
		return nil
	case *f.version:
		fmt.Fprintf(stdout, "srtd %s\n", version)
		return nil
	case *f.completion != "":
		script, err := program.Completion(*f.completion)
		if err != nil {
			return usageError{fmt.Errorf("--completion: %w", err)}
		}
		fmt.Fprint(stdout, script)
		return nil
	}
	addr, tokenFile, sandboxFlag, nonLoopback, addrFile := f.addr, f.tokenFile, f.sandbox, f.nonLoopback, f.addrFile
	maxSessions, maxExecs, maxTerminals, maxConns, maxAPIConns, maxBody := f.maxSessions, f.maxExecs, f.maxTerminals, f.maxConns, f.maxAPIConns, f.maxBody
	defaultBackend, nameGlobs, bwrap, microvmFlag, termNet := f.defaultBackend, f.nameGlobs, f.bwrap, f.microvm, f.termNet
	memLimit, cgroupParent, debug := f.memLimit, f.cgroupParent, f.debug
	sandboxOn, err := sandboxMode(*sandboxFlag, os.Getenv)
	if err != nil {
		return usageError{err}
	}
	switch *defaultBackend {
	case "", "native", "microvm", "none":
	default:
		return usageError{fmt.Errorf("--default-backend %q: want native, microvm or none", *defaultBackend)}
	}
	vmMode := *microvmFlag
	if vmMode == "" {
		vmMode = os.Getenv("SRTD_MICROVM")
	}
	switch strings.ToLower(vmMode) {
	case "", "auto":
		vmMode = "auto"
	case "off":
		vmMode = "off"
	default:
		return usageError{fmt.Errorf("--microvm %q: want auto or off", vmMode)}
	}
	if *nameGlobs != "standard" && *nameGlobs != "none" {
		return usageError{fmt.Errorf("--name-glob-write-denies %q: want standard or none", *nameGlobs)}
	}
	if !server.ValidTerminalNetwork(api.TerminalNetwork(*termNet)) {
		return usageError{fmt.Errorf("--terminal-network %q: want open or baseline", *termNet)}
	}
	memoryLimit, err := port.ParseMemoryLimit(*memLimit)
	if err != nil {
		return usageError{err}
	}
	if *maxConns <= 0 || *maxAPIConns <= 0 || *maxSessions <= 0 {
		return usageError{errors.New("--max-conns-per-session, --max-api-conns and --max-sessions must be > 0")}
	}
	if err := checkLoopback(*addr, *nonLoopback); err != nil {
		return usageError{err}
	}
	if *tokenFile == "" {
		p, err := defaultTokenFile()
		if err != nil {
			return err
		}
		*tokenFile = p
	}

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	lg := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	explicit := false
	fs.Visit(func(f *flag.Flag) {
		explicit = explicit || f.Name == "max-conns-per-session" || f.Name == "max-sessions"
	})
	conns, sessions, err := descriptorBudget(lg, *maxConns, fdBounds{sessions: *maxSessions, execs: *maxExecs, terminals: *maxTerminals, apiConns: *maxAPIConns}, explicit)
	if err != nil {
		return err
	}

	// Listen first: srtd's own address is denied to every session's
	// egress (a session allowed "127.0.0.1" must still not reach the API).
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	// Only this user's (and root's) connections, closed before a byte is
	// read: another local user, who cannot have the token, cannot hold
	// connection slots either (peeruid: the owner of a loopback peer's
	// socket, from the kernel's socket table).
	ln = peeruid.Filter(ln, peerAllowed, !listensOnLoopbackOnly(ln.Addr()), refusedPeerLog(lg))
	// A bounded number of API connections, so a local client cannot spend
	// srtd's descriptors either: more wait in the kernel's queue.
	ln = netutil.LimitListener(ln, *maxAPIConns)
	// And to every other sandbox of this user: srt's proxies refuse the
	// addresses registered here (linux.ServerAddresses).
	unregister, err := registerServer(ln.Addr())
	if err != nil {
		return err
	}
	defer unregister()
	pt, err := newPort(portOptions{sandboxOn: sandboxOn, defaultBackend: *defaultBackend, nameGlobs: *nameGlobs, bwrap: *bwrap, microvm: vmMode, maxSessions: sessions,
		selfDeny: selfAddresses(ln.Addr()), maxConnsPerSession: conns, memoryLimit: memoryLimit, cgroupParent: *cgroupParent}, lg)
	if err != nil {
		return err
	}
	// The one start-up line (the microvm probe may still be running).
	pr := pt.Probe()
	lg.Info(port.StartupLine(pr, sandboxOn), "microvm", microVMVerdict(pr), "terminalNetwork", *termNet)

	token, err := writeToken(*tokenFile)
	if err != nil {
		return err
	}
	defer os.Remove(*tokenFile)

	// The console's cookie is sent by the browser to every port of the
	// host and can be replayed by any client holding it: only srtd's
	// peer-uid check (Linux, loopback-only listener) keeps other users'
	// connections out, so the console runs only where that check runs.
	con := console.Disabled(consoleOff(ln.Addr(), peeruid.Supported))
	if con.Off() == "" {
		con = console.New(ln.Addr().(*net.TCPAddr).Port)
	}
	srv, err := server.New(server.Config{
		Port: pt, Token: token, TokenFile: *tokenFile, Logger: lg, Console: con,
		MaxBodyBytes: *maxBody, MaxExecs: *maxExecs, MaxTerminals: *maxTerminals,
		Terminal: server.TerminalConfig{Network: api.TerminalNetwork(*termNet), SelfDeny: selfAddresses(ln.Addr())},
	})
	if err != nil {
		return err
	}
	if *addrFile != "" {
		if err := writeAddrFile(*addrFile, ln.Addr().String()+"\n"); err != nil {
			return err
		}
	}
	// The console's login URL: the one line its token is ever written
	// to (SECURITY.md, "Web console"), plain to be clicked.
	if why := con.Off(); why != "" {
		fmt.Fprintf(stderr, "Web console: off (%s)\n", why)
	} else {
		fmt.Fprintf(stderr, "Web console: %s\n", con.LoginURL(ln.Addr().String()))
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute, // an idle keep-alive connection frees its --max-api-conns slot
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if vp, ok := pt.(microVMProber); ok && pr.MicroVMState == port.MicroVMProbing {
		go func() {
			<-vp.MicroVMProbed()
			lg.Info("microvm probe", "microvm", microVMVerdict(pt.Probe()))
		}()
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-errc:
		srv.Close(context.Background())
		return err
	case s := <-sig:
		lg.Info("shutting down", "signal", s.String())
	}
	// Sandboxes first (srv.Close closes the port): their exec streams
	// then end, and Shutdown does not wait for them.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cerr := srv.Close(ctx)
	if err := hs.Shutdown(ctx); err != nil {
		hs.Close()
	}
	if cerr != nil {
		lg.Error("shutdown", "err", cerr)
	}
	return nil
}

// microVMProber is the port's (port.Runtime's) microvm probe, which may
// finish after start-up.
type microVMProber interface {
	MicroVMProbed() <-chan struct{}
}

// microVMVerdict is the start-up lines' microvm value: "probing",
// "available: <note>" or "unavailable: <note>".
func microVMVerdict(pr port.Probe) string {
	switch pr.MicroVMState {
	case port.MicroVMProbing:
		return "probing"
	case port.MicroVMAvailable:
		return "available: " + pr.MicroVMNote
	}
	return "unavailable: " + pr.MicroVMNote
}

// checkLoopback refuses a listen address that is not loopback, unless
// allowed: the token is the only lock, and it should not be tried from
// the network.
func checkLoopback(addr string, allow bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", addr, err)
	}
	if allow {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %q is not a loopback address; add --allow-non-loopback to listen there anyway", addr)
}

func defaultTokenFile() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "srtd", "token"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return filepath.Join(home, ".srtd", "token"), nil
}

// writeToken generates a 256-bit token and writes it to path, mode 0600,
// replacing the file atomically: a reader sees the old token or the new
// one, never a partial one, and never a file others can read.
func writeToken(path string) (string, error) {
	var b [32]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return token, nil
}

// selfAddresses are the domain-list entries that name srtd's own listener:
// its address, and the loopback spellings when it listens on loopback or
// on every interface.
func selfAddresses(a net.Addr) []string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return nil
	}
	p := strconv.Itoa(ta.Port)
	out := []string{net.JoinHostPort(ta.IP.String(), p)}
	if ta.IP.IsLoopback() || ta.IP.IsUnspecified() {
		out = append(out, "127.0.0.1:"+p, "localhost:"+p, "[::1]:"+p)
	}
	if ip4 := ta.IP.To4(); ip4 == nil && !ta.IP.IsLoopback() && !ta.IP.IsUnspecified() {
		out[0] = "[" + ta.IP.String() + "]:" + p
	}
	return out
}

// writeAddrFile writes the address through a new file renamed into place,
// so that a symbolic link planted at the path is replaced, never followed.
func writeAddrFile(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".srtd-addr-*")
	if err != nil {
		return fmt.Errorf("--addr-file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return fmt.Errorf("--addr-file: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("--addr-file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--addr-file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--addr-file: %w", err)
	}
	return nil
}

// sandboxMode is the seed's switch (seed 000: "--sandbox /
// CC_SERVER_SANDBOX accepte on (par défaut) ou off"): the flag, else
// $CC_SERVER_SANDBOX, else srtd's own $SRTD_SANDBOX, else on. It is an
// opt-out: on means "wrap when the host offers a backend", never
// "require one". The error names where a bad value came from.
func sandboxMode(flagValue string, getenv func(string) string) (bool, error) {
	src, mode := "--sandbox", flagValue
	for _, env := range []string{"CC_SERVER_SANDBOX", "SRTD_SANDBOX"} {
		if mode != "" {
			break
		}
		src, mode = env, getenv(env)
	}
	switch strings.ToLower(mode) {
	case "", "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%s %q: want on or off", src, mode)
}

// listensOnLoopbackOnly reports whether a is a loopback address: then no
// other host reaches it, and a peer with no socket here is refused.
func listensOnLoopbackOnly(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// consoleOff is why the web console must be off on listener a, or empty
// when srtd's peer-uid check guards it: peerCheck (peeruid.Supported)
// and a loopback-only listener, so that only srtd's own user and root
// can reach the API at all (SECURITY.md, "srtd web console").
func consoleOff(a net.Addr, peerCheck bool) string {
	switch {
	case !peerCheck:
		return "this platform has no peer-uid check, so any local user could replay the session cookie a browser sends to every port"
	case !listensOnLoopbackOnly(a):
		return "srtd listens beyond loopback (--allow-non-loopback), where the peer-uid check cannot keep other hosts from replaying the session cookie"
	}
	return ""
}

// peerAllowed: srtd's own user, and root, who can read its token anyway.
func peerAllowed(uid int) bool { return uid == os.Getuid() || uid == 0 }

// refusedPeerLog logs refused API connections, at most one line a
// second (a flood of them is one line per second, with the count).
func refusedPeerLog(lg *slog.Logger) func(net.Addr, int, error) {
	var (
		mu     sync.Mutex
		last   time.Time
		folded int
	)
	return func(peer net.Addr, uid int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < time.Second {
			folded++
			return
		}
		last = time.Now()
		if err != nil {
			lg.Warn("API connection refused: its owner is unknown", "peer", peer.String(), "err", err, "alsoRefused", folded)
		} else {
			lg.Warn("API connection refused: another user's", "peer", peer.String(), "uid", uid, "alsoRefused", folded)
		}
		folded = 0
	}
}
