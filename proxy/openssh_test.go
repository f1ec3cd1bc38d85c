package proxy

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"
)

const socksProxyCommandEnv = "SRT_TEST_SOCKS_PROXYCOMMAND"

// TestMain doubles as a SOCKS5 ProxyCommand for OpenSSH ("nc -X 5" is not
// installed everywhere): with socksProxyCommandEnv set, the test binary
// connects to argv[1]:argv[2] through that SOCKS5 proxy and copies stdio.
func TestMain(m *testing.M) {
	if addr := os.Getenv(socksProxyCommandEnv); addr != "" {
		os.Exit(socksProxyCommand(addr, os.Args[1], os.Args[2]))
	}
	os.Exit(m.Run())
}

func socksProxyCommand(addr, host, port string) int {
	d, err := xproxy.SOCKS5("tcp", addr, nil, xproxy.Direct)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	c, err := d.Dial("tcp", net.JoinHostPort(host, port))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	done := make(chan struct{})
	go func() {
		io.Copy(c, os.Stdin)
		c.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	io.Copy(os.Stdout, c)
	os.Stdout.Close()
	// Keep reading what ssh still writes (its KEXINIT) until it has read
	// the disconnect and gone: exiting now would make its write fail with
	// EPIPE before it prints the reason, which made this test flaky.
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
	return 0
}

// TestOpenSSHPrintsRefusal: a real ssh client, going through the SOCKS5
// proxy, prints the deny reason carried by the in-band SSH_MSG_DISCONNECT.
func TestOpenSSHPrintsRefusal(t *testing.T) {
	e := startProxy(t, baseRules)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, []string{socksProxyCommandEnv + "=" + e.socksAddr}, "ssh",
		"-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "ProxyCommand="+self+" %h %p",
		"git@denied.test", "true")
	want := "Received disconnect from UNKNOWN port 65535:1: " + deniedReason
	if code != 255 || !strings.Contains(errOut, want) {
		t.Fatalf("ssh exit %d, stderr %q; want 255 and %q", code, errOut, want)
	}
}
