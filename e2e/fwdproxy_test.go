package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// dialFromParentFrom dials addr's port at 127.0.0.1 from parentFrom,
// whatever name addr gives: the forward-proxy fixtures' way out, which the
// upstreams wrapped by onlyViaParent accept.
func dialFromParentFrom(ctx context.Context, _, addr string) (net.Conn, error) {
	_, port, _ := net.SplitHostPort(addr)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(parentFrom)}, Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
}

// forwardProxy is the forwarding half shared by the forward-proxy
// fixtures (parentFixture, mitmFixture), which record and authenticate in
// front of it. A CONNECT gets a 200, then the hijacked client connection
// is piped to dial(target), the bytes the server read before the hijack
// first. Any other request is an absolute URI, sent on as it is through a
// transport over dial; its status, headers and body are copied back. The
// transport's idle connections are closed when t ends.
func forwardProxy(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error)) http.Handler {
	tr := &http.Transport{DialContext: dial}
	t.Cleanup(tr.CloseIdleConnections)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			up, err := dial(r.Context(), "tcp", r.RequestURI)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer up.Close()
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			// The server may have read the client's first bytes before
			// the hijack.
			if n := brw.Reader.Buffered(); n > 0 {
				b, _ := brw.Reader.Peek(n)
				up.Write(b)
			}
			go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
			io.Copy(c, up)
			return
		}
		out := r.Clone(context.Background())
		out.RequestURI = ""
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
}

// startViaParentTLS serves HTTPS with testCertificates' leaf to
// connections from parentFrom only (onlyViaParent), answering
// "<greeting> <Host>\n"; the CA that signed the leaf is written to
// dir/ca.pem. It returns the CA file's path and the server's port.
func startViaParentTLS(t *testing.T, dir, greeting string) (caPath, port string) {
	t.Helper()
	ca, leaf := testCertificates(t)
	caPath = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(onlyViaParent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s\n", greeting, r.Host)
	})))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return caPath, strconv.Itoa(portOf(t, ts.Listener.Addr()))
}
