package main

import (
	"net"
	"strings"
	"testing"
)

func TestSandboxMode(t *testing.T) {
	for _, tc := range []struct {
		flag, cc, srtd string
		on             bool
		err            string
	}{
		{on: true},
		{flag: "off"},
		{cc: "off"},
		{cc: "OFF"},
		{srtd: "off"},
		{cc: "on", srtd: "off", on: true}, // the seed's name wins
		{flag: "on", cc: "off", on: true}, // the flag wins
		{cc: "maybe", err: "CC_SERVER_SANDBOX"},
		{flag: "yes", err: "--sandbox"},
	} {
		env := map[string]string{"CC_SERVER_SANDBOX": tc.cc, "SRTD_SANDBOX": tc.srtd}
		on, err := sandboxMode(tc.flag, func(k string) string { return env[k] })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err %v, want one naming %s", tc, err, tc.err)
			}
			continue
		}
		if err != nil || on != tc.on {
			t.Errorf("%+v: on %v err %v, want %v", tc, on, err, tc.on)
		}
	}
}

// TestConsoleOff: the web console runs only where the peer-uid check
// keeps everyone but srtd's user and root out: with the check, on a
// loopback-only listener.
func TestConsoleOff(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		peerCheck bool
		on        bool
	}{
		{"127.0.0.1:7777", true, true},
		{"[::1]:7777", true, true},
		{"0.0.0.0:7777", true, false},
		{"[::]:7777", true, false},
		{"192.0.2.1:7777", true, false},
		{"127.0.0.1:7777", false, false},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if why := consoleOff(a, tc.peerCheck); (why == "") != tc.on {
			t.Errorf("consoleOff(%s, peer check %v) = %q; want on %v", tc.addr, tc.peerCheck, why, tc.on)
		}
	}
}
