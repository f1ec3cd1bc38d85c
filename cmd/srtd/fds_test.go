package main

import (
	"strings"
	"testing"
)

func TestPlanConns(t *testing.T) {
	def := fdBounds{sessions: 64, execs: 64, terminals: 16, apiConns: 256}
	fixed := def.fixed()
	for _, tc := range []struct {
		name  string
		limit uint64
		want  int
		conns int
		// sessions 0 means def.sessions
		sessions int
		lowered  bool
		err      string
	}{
		{name: "unknown limit", limit: 0, want: 256, conns: 256},
		{name: "fits", limit: 1 << 20, want: 256, conns: 256},
		{name: "exactly fits", limit: fixed + 64*2*256, want: 256, conns: 256},
		{name: "one short", limit: fixed + 64*2*256 - 1, want: 256, conns: 255, lowered: true},
		{name: "lowered", limit: fixed + 64*2*30, want: 256, conns: 30, lowered: true},
		{name: "smallest cap", limit: fixed + 64*2*minConnsPerSession, want: 256, conns: minConnsPerSession, lowered: true},
		{name: "fewer sessions", limit: fixed + 64*2*minConnsPerSession - 1, want: 256, conns: minConnsPerSession, sessions: 63, lowered: true},
		{name: "a 4096 hard limit", limit: 4096, want: 256, conns: minConnsPerSession, sessions: 52, lowered: true},
		{name: "not one session", limit: 1024, want: 256, err: "ulimit -n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns, sessions, lowered, err := planConns(tc.limit, tc.want, def)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if tc.sessions == 0 {
				tc.sessions = def.sessions
			}
			if err != nil || conns != tc.conns || sessions != tc.sessions || lowered != tc.lowered {
				t.Errorf("conns %d sessions %d lowered %v err %v; want %d %d %v", conns, sessions, lowered, err, tc.conns, tc.sessions, tc.lowered)
			}
		})
	}
}
