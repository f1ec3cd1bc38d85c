// Package relay is the in-sandbox side of the network plumbing (issue 3
// "Plumbing"; srt-notes §4.6). Inside the sandbox's network namespace,
// which has only lo, it listens on loopback TCP ports (3128 for the HTTP
// proxy, 1080 for SOCKS5) and forwards every accepted connection, byte for
// byte, to the host-side proxy's unix socket, which is bind-mounted into
// the sandbox. It makes no policy decision: the host proxy judges
// everything.
//
// It replaces the reference's two in-sandbox socat processes. The relay
// opens a new AF_UNIX socket for every connection, so it must run in a
// process that the command's seccomp filter (which denies
// socket(AF_UNIX)) does not cover.
//
// The package also provides Dial and ProxyCommand, an HTTP CONNECT client
// for ssh's ProxyCommand (GIT_SSH_COMMAND inside the sandbox).
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
)

// Default in-sandbox listen addresses (srt-notes §4.7: the reference's
// ports).
const (
	DefaultHTTPPort  = 3128
	DefaultSOCKSPort = 1080
)

// Forward is one relay: every ListenAddrs entry is a TCP address to listen
// on ("127.0.0.1:3128", "[::1]:3128"; port 0 picks a free port), and each
// accepted connection is forwarded to the unix socket at UnixPath.
type Forward struct {
	ListenAddrs []string
	UnixPath    string
}

// LoopbackAddrs returns the IPv4 and IPv6 loopback addresses for port.
func LoopbackAddrs(port int) []string {
	p := fmt.Sprint(port)
	return []string{"127.0.0.1:" + p, "[::1]:" + p}
}

// Relay holds bound listeners. Create it with Listen, run it with Serve.
// A Relay is single-use.
type Relay struct {
	log      *slog.Logger
	bound    []boundListener
	skipped  []string // addresses not bound because the family is unavailable
	mu       sync.Mutex
	closed   bool
	conns    map[net.Conn]struct{} // guarded by mu
	wg       sync.WaitGroup
	closeOne sync.Once
}

type boundListener struct {
	ln   net.Listener
	unix string
}

// Listen binds every address of every Forward and returns once all are
// bound, so the caller can start the user command knowing the ports
// accept connections (Serve need not have started: the kernel queues
// them). An address of a family that lo does not have (IPv6 disabled:
// EADDRNOTAVAIL, EAFNOSUPPORT) is skipped, and listed by Skipped; any other
// failure, or a Forward left with no listener, closes what was bound and
// returns the error. log may be nil.
func Listen(ctx context.Context, fwds []Forward, log *slog.Logger) (*Relay, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{log: log, conns: make(map[net.Conn]struct{})}
	var lc net.ListenConfig
	for _, f := range fwds {
		if f.UnixPath == "" {
			r.closeListeners()
			return nil, errors.New("relay: Forward without UnixPath")
		}
		n := 0
		for _, a := range f.ListenAddrs {
			ln, err := lc.Listen(ctx, "tcp", a)
			if err != nil {
				if errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) {
					log.Debug("relay address unavailable, skipped", slog.String("host", a), slog.Any("error", err))
					r.skipped = append(r.skipped, a)
					continue
				}
				r.closeListeners()
				return nil, fmt.Errorf("relay listen %s: %w", a, err)
			}
			r.bound = append(r.bound, boundListener{ln, f.UnixPath})
			n++
		}
		if n == 0 {
			r.closeListeners()
			return nil, fmt.Errorf("relay for %s: no listen address could be bound (%v)", f.UnixPath, f.ListenAddrs)
		}
	}
	return r, nil
}

// Addrs returns the bound listener addresses, in Forward order.
func (r *Relay) Addrs() []net.Addr {
	out := make([]net.Addr, len(r.bound))
	for i, b := range r.bound {
		out[i] = b.ln.Addr()
	}
	return out
}

// Skipped returns the addresses Listen skipped because their address
// family is unavailable.
func (r *Relay) Skipped() []string { return append([]string(nil), r.skipped...) }

// Serve relays connections until ctx is cancelled or Close is called, then
// closes the listeners and every relayed connection and waits for them. It
// returns ctx.Err(), net.ErrClosed after Close, or the first accept
// failure.
func (r *Relay) Serve(ctx context.Context) error {
	errc := make(chan error, len(r.bound))
	for _, b := range r.bound {
		go func() { errc <- r.acceptLoop(ctx, b) }()
	}
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case err = <-errc:
	}
	r.Close()
	return err
}

// Close closes the listeners and the relayed connections and waits for
// the relay goroutines. It is idempotent.
func (r *Relay) Close() error {
	r.closeOne.Do(func() {
		r.mu.Lock()
		r.closed = true
		for c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.closeListeners()
	})
	r.wg.Wait()
	return nil
}

func (r *Relay) closeListeners() {
	for _, b := range r.bound {
		b.ln.Close()
	}
}

func (r *Relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

func (r *Relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	for _, c := range cs {
		delete(r.conns, c)
	}
	r.mu.Unlock()
}

func (r *Relay) acceptLoop(ctx context.Context, b boundListener) error {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return fmt.Errorf("relay accept on %s: %w", b.ln.Addr(), err)
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return net.ErrClosed
		}
		r.wg.Add(1) // under mu, so never concurrent with Close's Wait at zero
		r.mu.Unlock()
		go func() {
			defer r.wg.Done()
			r.forward(ctx, c, b.unix)
		}()
	}
}

// forward connects c to the unix socket and copies both ways. A failure
// to reach the host proxy just closes c: the client sees a reset
// connection, as it would from a dead proxy.
func (r *Relay) forward(ctx context.Context, c net.Conn, path string) {
	var d net.Dialer
	up, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		r.log.Debug("relay cannot reach the host proxy", slog.String("path", path), slog.Any("error", err))
		c.Close()
		return
	}
	if !r.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	defer r.untrack(c, up)
	Pipe(c, up)
}

// Pipe copies bytes both ways between a and b until both directions end,
// then closes both. End of stream in one direction becomes a half-close
// (CloseWrite) of the other side, so a client that finishes sending still
// receives the answer; an error in either direction closes both.
func Pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		halfPipe(b, a)
	}()
	halfPipe(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}

type closeWriter interface{ CloseWrite() error }

func halfPipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}

// Run binds fwds and relays until ctx is cancelled. Use Listen and Serve
// instead when the caller must know when the ports are bound.
func Run(ctx context.Context, fwds []Forward) error {
	r, err := Listen(ctx, fwds, nil)
	if err != nil {
		return err
	}
	return r.Serve(ctx)
}
