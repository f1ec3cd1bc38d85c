package guest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Tool runs a diagnostic tool named by args[0] ("fetch" or "dial") and
// returns its exit status; ok is false when args names no tool.
//
//	fetch URL        GET URL through $HTTP_PROXY (even loopback URLs); prints the status line
//	                 and the body; exit 0 on a 2xx answer, 1 otherwise.
//	fetch-socks URL  the same through the SOCKS5 relay ($FTP_PROXY).
//	dial HOST:PORT   a direct TCP connection (no proxy), 2 s timeout;
//	                 exit 0 if it connects, 1 otherwise.
func Tool(args []string) (status int, ok bool) {
	if len(args) != 2 {
		return 0, false
	}
	switch args[0] {
	case "fetch", "fetch-socks":
		// $HTTP_PROXY always, even for loopback addresses, which
		// ProxyFromEnvironment never proxies: the tests reach a host
		// service on 127.0.0.1 through the host's proxy.
		tr := &http.Transport{}
		p := os.Getenv("HTTP_PROXY")
		if args[0] == "fetch-socks" {
			// FTP_PROXY is the SOCKS5 relay (proxy.Env); Go's transport
			// speaks SOCKS5 and sends the host name, not an address.
			u, err := url.Parse(os.Getenv("FTP_PROXY"))
			if err != nil || u.Host == "" {
				fmt.Fprintln(os.Stderr, "fetch-socks: no FTP_PROXY")
				return 1, true
			}
			p = "socks5://" + u.Host
		}
		if p != "" {
			u, err := url.Parse(p)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fetch: HTTP_PROXY:", err)
				return 1, true
			}
			tr.Proxy = http.ProxyURL(u)
		}
		c := &http.Client{Timeout: 20 * time.Second, Transport: tr}
		resp, err := c.Get(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "fetch:", err)
			return 1, true
		}
		defer resp.Body.Close()
		fmt.Println(resp.Status)
		io.Copy(os.Stdout, resp.Body)
		if resp.StatusCode/100 != 2 {
			return 1, true
		}
		return 0, true
	case "dial":
		c, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			return 1, true
		}
		c.Close()
		fmt.Println("connected")
		return 0, true
	}
	return 0, false
}
