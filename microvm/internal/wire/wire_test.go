package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/srt-go/srt/violation"
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

func TestViolationFrame(t *testing.T) {
	in := violation.Violation{Action: violation.FileWriteCreate, Target: "/ro/x", Reason: "read-only share", PID: 7, Exe: "/bin/busybox"}
	p, err := EncodeViolation(in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteFrame(&b, FrameViolation, p); err != nil {
		t.Fatal(err)
	}
	typ, got, err := ReadFrame(&b, nil)
	if err != nil || typ != FrameViolation {
		t.Fatalf("ReadFrame = %d, %v", typ, err)
	}
	v, err := DecodeViolation(got)
	if err != nil {
		t.Fatal(err)
	}
	in.Raw = "deny file-write-create /ro/x (read-only share)"
	if v != in {
		t.Errorf("round trip = %+v, want %+v", v, in)
	}
	for _, bad := range []string{`{"action":"file-write-data"}`, `{"target":"/x"}`, `not json`} {
		if _, err := DecodeViolation([]byte(bad)); err == nil {
			t.Errorf("DecodeViolation(%s) accepted", bad)
		}
	}
}
