package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var b bytes.Buffer
	for _, f := range []struct {
		typ byte
		p   string
	}{{FrameStdout, "hello"}, {FrameStdin, ""}, {FrameSignal, "\x09"}} {
		if err := WriteFrame(&b, f.typ, []byte(f.p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"hello", "", "\x09"} {
		_, p, err := ReadFrame(&b, nil)
		if err != nil || string(p) != want {
			t.Fatalf("ReadFrame = %q, %v; want %q", p, err, want)
		}
	}
	if _, _, err := ReadFrame(&b, nil); err != io.EOF {
		t.Errorf("at end: %v, want EOF", err)
	}
}

func TestFrameLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"oversized-length", "\x01\xff\xff\xff\xff"},
		{"truncated-payload", "\x01\x00\x00\x00\x05abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ReadFrame(strings.NewReader(tc.in), nil); err == nil {
				t.Error("accepted")
			}
		})
	}
	if err := WriteFrame(io.Discard, FrameStdout, make([]byte, MaxFrame+1)); err == nil {
		t.Error("WriteFrame accepted an oversized payload")
	}
}

func TestJSONLineLeavesTheRest(t *testing.T) {
	r := strings.NewReader(`{"argv":["sh"]}` + "\nREST")
	var req ExecRequest
	if err := ReadJSON(r, &req); err != nil || req.Argv[0] != "sh" {
		t.Fatalf("ReadJSON = %+v, %v", req, err)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "REST" {
		t.Errorf("rest %q", rest)
	}
}
