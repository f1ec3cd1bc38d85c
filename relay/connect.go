package relay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/srt-go/srt/internal/halfclose"
)

// DefaultProxyAddr is the in-sandbox HTTP proxy relay address.
const DefaultProxyAddr = "127.0.0.1:3128"

// RefusedError is returned by Dial when the proxy answers CONNECT with
// anything but 2xx.
type RefusedError struct {
	// Target is the "host:port" that was asked for.
	Target string
	// StatusCode is the proxy's status code (403 for a policy refusal,
	// 502 for an upstream failure).
	StatusCode int
	// Reason is the refusal text: the status text of the answer (the
	// proxy puts the deny reason there), or its body when the status text
	// is the generic one.
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("CONNECT %s: %d %s", e.Target, e.StatusCode, e.Reason)
}

// Dial opens a tunnel to target ("host:port", IPv6 bracketed) through the
// HTTP proxy at proxyAddr (DefaultProxyAddr inside the sandbox) with an
// HTTP CONNECT request (RFC 9110 §9.3.6). It returns the tunnel once the
// proxy answered 200, or a *RefusedError for any other status. ctx bounds
// the dial and the CONNECT exchange, not the returned connection.
func Dial(ctx context.Context, proxyAddr, target string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("dial proxy %s: %w", proxyAddr, err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	req := &http.Request{
		Method: http.MethodConnect,
		Host:   target,
		URL:    &url.URL{Host: target},
		Header: http.Header{"User-Agent": {"srt-proxy-connect"}},
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s via %s: %w", target, proxyAddr, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("CONNECT %s via %s: %w", target, proxyAddr, err)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		c.Close()
		reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)))
		if reason == http.StatusText(resp.StatusCode) && len(body) > 0 {
			reason = strings.TrimSpace(string(body))
		}
		return nil, &RefusedError{Target: target, StatusCode: resp.StatusCode, Reason: reason}
	}
	if br.Buffered() > 0 { // the server already sent tunnel bytes
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// ProxyCommand is ssh's ProxyCommand ("srt proxy-connect %h %p"): it opens
// a CONNECT tunnel to target through proxyAddr and copies stdin to the
// tunnel and the tunnel to stdout. It returns when the remote side has
// closed the tunnel and everything was written to stdout; end of stdin is
// passed on as a half-close.
//
// On a refusal it writes "srt proxy-connect: <target>: <reason>" to stderr
// and returns the *RefusedError; the caller exits non-zero (ssh then
// reports "Connection closed by UNKNOWN"). The goroutine reading stdin
// may stay blocked in Read after return; that is harmless in a process
// about to exit, and a test can close its stdin pipe.
func ProxyCommand(ctx context.Context, proxyAddr, target string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := Dial(ctx, proxyAddr, target)
	if err != nil {
		fmt.Fprintf(stderr, "srt proxy-connect: %s: %s\n", target, reasonOf(err))
		return err
	}
	defer c.Close()
	var once sync.Once
	go func() {
		io.Copy(c, stdin)
		once.Do(func() {
			if cw, ok := c.(halfclose.CloseWriter); ok {
				cw.CloseWrite()
			}
		})
	}()
	if _, err := io.Copy(stdout, c); err != nil {
		return fmt.Errorf("proxy-connect %s: %w", target, err)
	}
	return nil
}

func reasonOf(err error) string {
	if re, ok := err.(*RefusedError); ok {
		return re.Reason
	}
	return err.Error()
}

// bufferedConn serves reads from r (which holds bytes read past the
// CONNECT answer) before the connection itself.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the underlying connection.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(halfclose.CloseWriter); ok {
		return cw.CloseWrite()
	}
	return nil
}
