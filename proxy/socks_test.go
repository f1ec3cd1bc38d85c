package proxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/violation"
	xproxy "golang.org/x/net/proxy"
)

// socksConnect performs a no-auth SOCKS5 CONNECT to host:port (domain
// address type) and returns the reply code.
func socksConnect(t *testing.T, addr, host, port string) byte {
	t.Helper()
	c, br := socksDial(t, addr, host, port)
	defer c.Close()
	return readReply(t, br)
}

func socksDial(t *testing.T, addr, host, port string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	p, _ := strconv.Atoi(port)
	req := []byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}
	req = append(req, host...)
	req = binary.BigEndian.AppendUint16(req, uint16(p))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var m [2]byte
	if _, err := io.ReadFull(br, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("method reply %v %v", m, err)
	}
	return c, br
}

func readReply(t *testing.T, br *bufio.Reader) byte {
	t.Helper()
	var r [4]byte
	if _, err := io.ReadFull(br, r[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	n := 4
	if r[3] == atypIPv6 {
		n = 16
	}
	if _, err := io.ReadFull(br, make([]byte, n+2)); err != nil {
		t.Fatalf("reply address: %v", err)
	}
	return r[1]
}

func TestSOCKS5Replies(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	port := portOf(t, srv.URL)
	closed := listen(t)
	closedPort := portOf(t, closed.Addr().String())
	closed.Close()
	tests := []struct {
		name, host, port string
		rep              byte
	}{
		{"allowed", "allowed.test", port, RepSucceeded},
		{"denied", "denied.test", port, RepNotAllowed},
		{"not-listed", "other.test", port, RepNotAllowed},
		{"metadata-name", "metadata.google.internal", "80", RepNotAllowed},
		{"malformed", "bad host", "80", RepNotAllowed},
		{"refused", "allowed.test", closedPort, RepConnectionRefused},
		{"nxdomain", "nx.test", "443", RepHostUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rep := socksConnect(t, e.socksAddr, tt.host, tt.port); rep != tt.rep {
				t.Fatalf("REP=%d, want %d", rep, tt.rep)
			}
		})
	}
	// Each connection reports from its own goroutine, so the records may
	// come in any order: look for denied.test's.
	vs := e.vio.wait(t, 4)
	i := slices.IndexFunc(vs, func(v violation.Violation) bool { return v.Target == "denied.test:"+port })
	if i < 0 || vs[i].Protocol != "socks5" || vs[i].Reason != deniedReason {
		t.Errorf("no socks5 violation for denied.test with the deny reason in %+v", vs)
	}
}

// TestSOCKS5DeniedNameNeverResolved: the rule check runs before DNS, so a
// refused name is not looked up (escape-classes.md item 7).
func TestSOCKS5DeniedNameNeverResolved(t *testing.T) {
	e := startProxy(t, baseRules)
	for _, h := range []string{"secret-data.exfil.test", "denied.test"} {
		if rep := socksConnect(t, e.socksAddr, h, "443"); rep != RepNotAllowed {
			t.Fatalf("%s: REP=%d", h, rep)
		}
		if e.res.looked(h) {
			t.Errorf("%s was resolved", h)
		}
	}
}

func TestSOCKS5Protocol(t *testing.T) {
	e := startProxy(t, baseRules)
	t.Run("no-acceptable-method", func(t *testing.T) {
		c, _ := net.Dial("tcp", e.socksAddr)
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte{5, 1, 2}) // username/password only
		b, _ := io.ReadAll(c)
		if string(b) != "\x05\xff" {
			t.Fatalf("got %x", b)
		}
	})
	for name, tc := range map[string]struct {
		req []byte
		rep byte
	}{
		"bind":         {[]byte{5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, RepCommandUnsupported},
		"udp":          {[]byte{5, 3, 0, 1, 127, 0, 0, 1, 0, 80}, RepCommandUnsupported},
		"bad-atyp":     {[]byte{5, 1, 0, 9, 127, 0, 0, 1, 0, 80}, RepAddressUnsupported},
		"ipv4-denied":  {[]byte{5, 1, 0, 1, 169, 254, 169, 254, 0, 80}, RepNotAllowed},
		"ipv6-denied":  {append(append([]byte{5, 1, 0, 4}, make([]byte, 15)...), 1, 0, 80), RepNotAllowed}, // [::1]
		"ipv4-allowed": {[]byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 1}, RepConnectionRefused},                     // allowed literal, nothing listens on :1
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", e.socksAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(append([]byte{5, 1, 0}, tc.req...))
			br := bufio.NewReader(c)
			br.Discard(2)
			if rep := readReply(t, br); rep != tc.rep {
				t.Fatalf("REP=%d, want %d", rep, tc.rep)
			}
		})
	}
}

// TestSOCKS5SSHRefusal parses the in-band refusal the way an SSH client
// would: identification line, then one unencrypted binary packet.
func TestSOCKS5SSHRefusal(t *testing.T) {
	e := startProxy(t, baseRules)
	c, br := socksDial(t, e.socksAddr, "denied.test", "22")
	defer c.Close()
	if rep := readReply(t, br); rep != RepSucceeded {
		t.Fatalf("REP=%d, want 0 for port 22", rep)
	}
	io.WriteString(c, "SSH-2.0-OpenSSH_9.2p1 test\r\n")
	banner, err := br.ReadString('\n')
	if err != nil || banner != "SSH-2.0-srt_policy_refusal\r\n" {
		t.Fatalf("banner %q %v", banner, err)
	}
	var hdr [5]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	plen := binary.BigEndian.Uint32(hdr[:4])
	pad := int(hdr[4])
	if (4+plen)%8 != 0 || pad < 4 || int(plen) <= pad+1 {
		t.Fatalf("bad framing: packet_length=%d padding_length=%d", plen, pad)
	}
	rest := make([]byte, plen-1)
	if _, err := io.ReadFull(br, rest); err != nil {
		t.Fatal(err)
	}
	payload := rest[:len(rest)-pad]
	if payload[0] != 1 {
		t.Fatalf("message %d, want SSH_MSG_DISCONNECT (1)", payload[0])
	}
	if code := binary.BigEndian.Uint32(payload[1:5]); code != 1 {
		t.Fatalf("reason code %d, want 1 (HOST_NOT_ALLOWED_TO_CONNECT)", code)
	}
	dlen := binary.BigEndian.Uint32(payload[5:9])
	desc := string(payload[9 : 9+dlen])
	lang := binary.BigEndian.Uint32(payload[9+dlen:])
	if desc != deniedReason || lang != 0 || len(payload) != int(13+dlen) {
		t.Fatalf("description %q, language length %d", desc, lang)
	}
	if tail, _ := io.ReadAll(br); len(tail) != 0 {
		t.Fatalf("unexpected bytes after the packet: %q", tail)
	}
	if v := e.vio.wait(t, 1)[0]; v.Target != "denied.test:22" || v.Protocol != "socks5" {
		t.Errorf("violation %+v", v)
	}
}

func TestSSHPacketPadding(t *testing.T) {
	for n := range 40 {
		p := sshDisconnectPacket(strings.Repeat("x", n), false)
		plen := binary.BigEndian.Uint32(p)
		if len(p)%8 != 0 || int(plen)+4 != len(p) || p[4] < 4 {
			t.Fatalf("reason length %d: len %d packet_length %d padding %d", n, len(p), plen, p[4])
		}
	}
}

// TestGoSOCKS5Client uses golang.org/x/net/proxy as an HTTP client's dialer.
func TestGoSOCKS5Client(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	d, err := xproxy.SOCKS5("tcp", e.socksAddr, nil, xproxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: d.(xproxy.ContextDialer).DialContext}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://allowed.test:" + portOf(t, srv.URL) + "/socks")
	if err != nil {
		t.Fatal(err)
	}
	if b := body(resp); b != "hello from origin allowed.test:"+portOf(t, srv.URL)+" /socks" {
		t.Fatalf("body %q", b)
	}
	resp.Body.Close()
	_, err = d.Dial("tcp", "denied.test:443")
	if err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
		t.Fatalf("denied: %v", err)
	}
}
