package main

import (
	"fmt"
	"log/slog"

	"github.com/srt-go/srt/proxy"
)

// srtd's descriptor budget (issue 16, "Descriptor exhaustion"): every
// session's proxies run in srtd, so each connection a sandboxed command
// opens to them costs srtd a descriptor, and its upstream another. srtd
// bounds each kind of thing a client or a session can make it hold
// (sessions, execs, terminals, API connections, connections per session)
// and checks at start-up that the bounds fit its RLIMIT_NOFILE with a
// reserve for its own work, lowering the per-session connection cap when
// they do not.
const (
	// fdReserve is srtd's own work beyond the figures below: its log and
	// listener, the token and address files, the probes and the microvm
	// probe's test boot, a launch's transient files.
	fdReserve = 256
	// fdPerSession is a session's fixed descriptors, its proxies'
	// connections apart: 13 measured for a native session (PID 1's pidfd,
	// pipes and control socket, the seccomp notifier, the proxies'
	// listeners, cgroup files), with room, plus the plain-HTTP pool's
	// idle upstreams.
	fdPerSession = 32 + proxy.MaxIdleUpstream
	// fdPerExec is an exec's stdio pipes and control (3 measured).
	fdPerExec = 8
	// fdPerTerminal is a terminal's pty and pipes.
	fdPerTerminal = 8
	// fdPerConn is one proxied connection: the client's end and its
	// upstream.
	fdPerConn = 2
	// minConnsPerSession is the smallest per-session connection cap srtd
	// lowers --max-conns-per-session to; below it srtd refuses to start.
	minConnsPerSession = 8
)

// fdBounds are the flags that bound what srtd holds.
type fdBounds struct {
	sessions, execs, terminals, apiConns int
}

// fixed is the descriptors b needs besides the sessions' connections.
func (b fdBounds) fixed() uint64 {
	return uint64(fdReserve + b.sessions*fdPerSession + b.execs*fdPerExec + b.terminals*fdPerTerminal + b.apiConns)
}

// planConns returns the per-session connection cap that fits a
// descriptor limit of limit with bounds b: want when it fits, else the
// largest cap that does (lowered true). It is an error when even
// minConnsPerSession does not fit. A limit of 0 means unknown: want.
func planConns(limit uint64, want int, b fdBounds) (conns int, lowered bool, err error) {
	if limit == 0 {
		return want, false, nil
	}
	per := uint64(b.sessions * fdPerConn)
	fit := uint64(0)
	if limit > b.fixed() {
		fit = (limit - b.fixed()) / per
	}
	if fit >= uint64(want) {
		return want, false, nil
	}
	if fit >= minConnsPerSession {
		return int(fit), true, nil
	}
	return 0, false, fmt.Errorf("descriptor limit %d is too low: %d sessions (--max-sessions) with %d proxy connections each, %d execs (--max-execs), %d terminals (--max-terminals), %d API connections (--max-api-conns) and a reserve of %d need %d descriptors; raise the limit (ulimit -n) or lower those flags",
		limit, b.sessions, minConnsPerSession, b.execs, b.terminals, b.apiConns, fdReserve, b.fixed()+minConnsPerSession*per)
}

// descriptorBudget raises srtd's RLIMIT_NOFILE soft limit to the hard
// limit, logs both, and returns the per-session connection cap that fits
// (planConns), logging when it is lower than want.
func descriptorBudget(lg *slog.Logger, want int, b fdBounds) (int, error) {
	soft, hard, err := raiseNoFile()
	if err != nil {
		return 0, fmt.Errorf("descriptor limit: %w", err)
	}
	conns, lowered, err := planConns(soft, want, b)
	if err != nil {
		return 0, err
	}
	if lowered {
		lg.Warn("--max-conns-per-session lowered to fit the descriptor limit", "want", want, "connsPerSession", conns, "limit", soft)
	}
	lg.Info("descriptor budget", "limit", soft, "hard", hard, "connsPerSession", conns, "sessions", b.sessions)
	return conns, nil
}
