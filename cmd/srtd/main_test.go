package main

import (
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
