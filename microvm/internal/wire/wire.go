// Package wire is the protocol between the microvm host and the guest
// agent. Both ends speak yamux (github.com/hashicorp/yamux) over one
// virtio-serial port: the host is the yamux client, the guest the server.
// Every stream starts with one Kind byte naming what it carries.
//
// An exec stream then carries one JSON line (ExecRequest) from the host,
// one JSON line (ExecStarted) from the guest, and frames both ways:
// type (1 byte), length (4 bytes, big endian), payload. The guest's
// FrameViolation frames carry the refusals its seccomp supervisor saw in
// that process's tree (microvm/guest, observe_linux.go), each written
// before the call is answered or, for an observed filesystem call, once
// it is classified, and all of them before FrameExit.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/srt-go/srt/violation"
)

// Version is bumped on every incompatible change; the guest reports it in
// Hello and the host refuses a mismatch.
const Version = 1

// PortName is the virtio-serial port name the guest looks for in
// /sys/class/virtio-ports/*/name.
const PortName = "srt.ctl"

// Kind is the first byte of a stream.
type Kind byte

const (
	KindInit    Kind = 'I' // host→guest: GuestConfig, reply Hello
	KindExec    Kind = 'E' // host→guest: one process
	KindControl Kind = 'C' // host→guest: one Control request, one ControlReply
	KindHTTP    Kind = 'H' // guest→host: a client of the guest's HTTP proxy relay
	KindSOCKS   Kind = 'S' // guest→host: a client of the guest's SOCKS5 relay
)

// Share is one virtio-9p export mounted by the guest.
type Share struct {
	Tag      string `json:"tag"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly"`
	// Host is the host directory the share exports (microvm.Share.HostPath),
	// for the guest's fsplan.Mapping when Rules are set: the rules are
	// written in host paths.
	Host string `json:"host,omitempty"`
}

// GuestConfig is sent once after boot and again after a snapshot restore.
type GuestConfig struct {
	Shares    []Share  `json:"shares"`
	Protected []string `json:"protected"`
	Hostname  string   `json:"hostname"`
	// HTTPPort and SOCKSPort are the guest loopback ports of the relays.
	HTTPPort  int `json:"httpPort"`
	SOCKSPort int `json:"socksPort"`
	// UnixTime is the host clock (nanoseconds), so a restored guest can
	// step its clock forward.
	UnixTime int64 `json:"unixTime"`
	// System are the host's system directories (microvm.Config.System),
	// mounted read-only before Shares, parents first.
	System []Share `json:"system,omitempty"`
	// Links are symbolic links the guest makes before mounting System
	// (/bin -> usr/bin), replacing whatever its initramfs has there.
	Links []Link `json:"links,omitempty"`
	// Rules, when not nil (microvm.Config.Names), are the filesystem rules
	// every process the guest starts runs under at creation time, with the
	// same supervisor as the native backend; a process whose rules cannot
	// be set up does not start.
	Rules *Rules `json:"rules,omitempty"`
	// Pinned are guest directories bound on themselves before the
	// protected paths, parents first, so that they cannot be renamed or
	// removed (microvm.Config.Names; fsplan.PinnedParents).
	Pinned []string `json:"pinned,omitempty"`
}

// Link is one symbolic link the guest makes.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Hello is the guest's answer to GuestConfig.
type Hello struct {
	Version int    `json:"version"`
	Kernel  string `json:"kernel"`
	// UptimeMS is the guest's uptime when it answered.
	UptimeMS int64 `json:"uptimeMs"`
	// Unprotected lists protected paths that did not exist in the guest,
	// so nothing could be mounted on them.
	Unprotected []string `json:"unprotected,omitempty"`
	Error       string   `json:"error,omitempty"`
	// Landlock is the guest kernel's Landlock ABI version, 0 without
	// Landlock: the backstop of the creation-time rules (Rules) is there
	// only where it is not 0.
	Landlock int `json:"landlock,omitempty"`
}

// TTYSize is a terminal size in character cells.
type TTYSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// ExecRequest starts one process.
type ExecRequest struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	TTY  *TTYSize `json:"tty,omitempty"`
	// UnixTime is the host clock when the request was sent (nanoseconds):
	// a guest clock behind it is stepped forward before the process starts
	// (under TCG the guest's clock falls seconds behind while it boots).
	UnixTime int64 `json:"unixTime,omitempty"`
}

// ExecStarted answers an ExecRequest: the guest pid, or why it did not start.
type ExecStarted struct {
	PID   int    `json:"pid"`
	Error string `json:"error,omitempty"`
	// Code is, with Error, the exit status a shell gives for the failure:
	// 127 command not found, 126 found but not executable; 0 for a
	// failure of the guest itself.
	Code int `json:"code,omitempty"`
}

// Control is a VM-wide request.
type Control struct {
	// Op is "quiesce" (unmount the shares before a snapshot), "poweroff"
	// or "ping".
	Op string `json:"op"`
}

// ControlReply answers a Control.
type ControlReply struct {
	Error string `json:"error,omitempty"`
}

// Frame types.
const (
	FrameStdin  byte = 0 // host→guest; empty payload is end of input
	FrameStdout byte = 1 // guest→host
	FrameStderr byte = 2 // guest→host
	FrameExit   byte = 3 // guest→host; ExitStatus
	FrameSignal byte = 4 // host→guest; 1 byte signal number
	FrameResize byte = 5 // host→guest; rows, cols as uint16 big endian
	// FrameViolation is guest→host: one violation.Violation as JSON
	// (EncodeViolation), a refusal in the process's tree. The host emits
	// it as a violation event; a frame that does not decode is dropped.
	FrameViolation byte = 6
)

// EncodeViolation is the payload of a FrameViolation. Raw is filled in
// (violation.Violation.Line) when empty, so both ends show one line.
func EncodeViolation(v violation.Violation) ([]byte, error) {
	if v.Raw == "" {
		v.Raw = v.Line()
	}
	return json.Marshal(v)
}

// DecodeViolation parses a FrameViolation payload; it refuses one without
// an Action or Target, which no refusal lacks.
func DecodeViolation(p []byte) (violation.Violation, error) {
	var v violation.Violation
	if err := json.Unmarshal(p, &v); err != nil {
		return v, fmt.Errorf("violation frame: %w", err)
	}
	if v.Action == "" || v.Target == "" {
		return v, errors.New("violation frame without action or target")
	}
	return v, nil
}

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// ExitStatus is the payload of FrameExit.
type ExitStatus struct {
	// Code is the exit status, or 128+N when killed by signal N.
	Code int `json:"code"`
	// Signal is N when the process was killed by a signal, else 0.
	Signal int `json:"signal,omitempty"`
	// ViolationsDropped counts the refusals the guest did not send because
	// the stream was too far behind (the queue is bounded so that a flood
	// never blocks the workload).
	ViolationsDropped int `json:"violationsDropped,omitempty"`
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, typ byte, p []byte) error {
	if len(p) > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(p), MaxFrame)
	}
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	if len(p) == 0 {
		_, err := w.Write(h[:])
		return err
	}
	// One Write per frame keeps frames whole when several goroutines
	// share w under a mutex.
	b := make([]byte, 5+len(p))
	copy(b, h[:])
	copy(b[5:], p)
	_, err := w.Write(b)
	return err
}

// ReadFrame reads one frame; buf is reused when large enough.
func ReadFrame(r io.Reader, buf []byte) (typ byte, p []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds %d", n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	p = buf[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}

// WriteJSON writes v as one line.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadJSON reads one line into v. It reads byte by byte so that nothing
// after the line is consumed.
func ReadJSON(r io.Reader, v any) error {
	var line []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		if b[0] == '\n' {
			break
		}
		if len(line) >= MaxFrame {
			return errors.New("JSON line too long")
		}
		line = append(line, b[0])
	}
	return json.Unmarshal(line, v)
}
