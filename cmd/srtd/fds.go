package main

import (
	"context"
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

// planConns returns the per-session connection cap and the session
// limit that fit a descriptor limit of limit with bounds b: want and
// b.sessions when they fit; else the largest cap that does (lowered
// true); else, when not even minConnsPerSession fits, the cap
// minConnsPerSession with as many sessions as fit (lowered true). It is
// an error only when not one session fits. A limit of 0 means unknown:
// want and b.sessions.
func planConns(limit uint64, want int, b fdBounds) (conns, sessions int, lowered bool, err error) {
	if limit == 0 {
		return want, b.sessions, false, nil
	}
	per := uint64(b.sessions * fdPerConn)
	fit := uint64(0)
	if limit > b.fixed() {
		fit = (limit - b.fixed()) / per
	}
	if fit >= uint64(want) {
		return want, b.sessions, false, nil
	}
	if fit >= minConnsPerSession {
		return int(fit), b.sessions, true, nil
	}
	// Fewer sessions: each costs fdPerSession and its connections.
	one := fdBounds{execs: b.execs, terminals: b.terminals, apiConns: b.apiConns}
	perSession := uint64(fdPerSession + minConnsPerSession*fdPerConn)
	if limit > one.fixed() {
		if n := (limit - one.fixed()) / perSession; n >= 1 {
			return minConnsPerSession, int(min(n, uint64(b.sessions))), true, nil
		}
	}
	return 0, 0, false, fmt.Errorf("descriptor limit %d is too low: one session with %d proxy connections, %d execs (--max-execs), %d terminals (--max-terminals), %d API connections (--max-api-conns) and a reserve of %d need %d descriptors; raise the limit (ulimit -n) or lower those flags",
		limit, minConnsPerSession, b.execs, b.terminals, b.apiConns, fdReserve, one.fixed()+perSession)
}

// descriptorBudget raises srtd's RLIMIT_NOFILE soft limit to the hard
// limit, logs both, and returns the per-session connection cap that fits
// and session limit (planConns), logging when they are lower than asked:
// at Warn when explicit (the operator set --max-conns-per-session or
// --max-sessions), else at Info, since the defaults are made to be
// lowered on a host with a small limit.
func descriptorBudget(lg *slog.Logger, want int, b fdBounds, explicit bool) (conns, sessions int, err error) {
	soft, hard, err := raiseNoFile()
	if err != nil {
		return 0, 0, fmt.Errorf("descriptor limit: %w", err)
	}
	conns, sessions, lowered, err := planConns(soft, want, b)
	if err != nil {
		return 0, 0, err
	}
	if lowered {
		level := slog.LevelInfo
		if explicit {
			level = slog.LevelWarn
		}
		lg.Log(context.Background(), level, "lowered to fit the descriptor limit (raise ulimit -n for more)", "maxConnsPerSession", conns, "wantConns", want, "maxSessions", sessions, "wantSessions", b.sessions, "limit", soft)
	}
	lg.Info("descriptor budget", "limit", soft, "hard", hard, "connsPerSession", conns, "sessions", sessions)
	return conns, sessions, nil
}
