package inside

// This file runs inside the sandbox as ssh's ProxyCommand (srt's binary
// started with wire.ProxyConnectArg from GIT_SSH_COMMAND, which srt sets
// in the sandbox's environment): it opens a CONNECT tunnel through the
// sandbox's HTTP proxy and relays ssh's stdio over it.

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/srt-go/srt/relay"
	"github.com/srt-go/srt/sandbox/linux/wire"
)

// RunProxyConnect is the ProxyCommand's main function; args are the
// arguments after wire.ProxyConnectArg, host and port. It never returns.
func RunProxyConnect(args []string) {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: srt %s HOST PORT\n", wire.ProxyConnectArg)
		os.Exit(2)
	}
	err := relay.ProxyCommand(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(wire.HTTPProxyPort)),
		net.JoinHostPort(args[0], args[1]), os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
