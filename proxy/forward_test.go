package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/srt-go/srt/internal/halfclose"
)

// forwardHandler is the forwarding half shared by the forward-proxy
// fixtures (fwdProxy, mitmFixture), which record, authenticate and echo in
// front of it. A CONNECT gets a 200, then the hijacked client connection
// is piped to dial(target), the bytes the server read before the hijack
// (the client's ClientHello, sent right after the 200) first. Any other
// request is an absolute URI, sent on as it is through a transport over
// dial; its status and body are copied back. The transport's idle
// connections are closed when t ends.
func forwardHandler(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) http.Handler {
	tr := &http.Transport{DialContext: dial}
	t.Cleanup(tr.CloseIdleConnections)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			up, err := dial(r.Context(), "tcp", r.RequestURI)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				up.Close()
				return
			}
			if n := brw.Reader.Buffered(); n > 0 {
				b, _ := brw.Reader.Peek(n)
				up.Write(b)
			}
			halfclose.Pipe(c, up)
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
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
}
