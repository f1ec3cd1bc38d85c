package guardian

// This file runs in srt: it starts the guardian and talks to it.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"golang.org/x/sys/unix"
)

// Client is srt's handle on one guardian process. Its methods are safe
// for concurrent use.
type Client struct {
	// mu serialises the exchanges: one request and its reply at a time.
	mu   sync.Mutex
	cmd  *exec.Cmd
	conn *os.File
	rd   *bufio.Reader
}

// Start starts the guardian for one sandbox; stateDir is srt's state
// directory (its "locks" subdirectory holds the placeholder locks). The
// running binary must dispatch wire.GuardianArg (sandbox.Main).
func Start(stateDir string) (*Client, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("guardian socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "guardian"), os.NewFile(uintptr(fds[1]), "guardian")
	defer theirs.Close()
	cmd := exec.Command("/proc/self/exe", wire.GuardianArg, stateDir)
	cmd.ExtraFiles = []*os.File{theirs} // wire.GuardianFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("starting guardian: %w", err)
	}
	return &Client{cmd: cmd, conn: ours, rd: bufio.NewReader(ours)}, nil
}

func (c *Client) call(req wire.GuardianRequest) (wire.GuardianReply, error) {
	var rep wire.GuardianReply
	b, _ := json.Marshal(req)
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return rep, fmt.Errorf("guardian: %w", err)
	}
	line, err := c.rd.ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("guardian: %w", err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("guardian reply: %w", err)
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// Hold has the guardian hold each placeholder for this sandbox, creating
// the ones that are missing, parents before children: a directory another
// sandbox made (and may just have removed) must be there before a
// placeholder in it. Every request is sent before the replies are read,
// so a batch costs one round trip. The first failure is returned, naming
// its path; a guardian that does not answer within 15 s fails it too.
func (c *Client) Hold(ps []fsplan.Placeholder) error {
	reqs := make([]wire.GuardianRequest, 0, len(ps))
	for _, p := range ps {
		reqs = append(reqs, wire.GuardianRequest{Op: wire.GuardianCreate, Path: p.Path, Dir: p.Dir, Content: p.Content})
	}
	slices.SortStableFunc(reqs, func(a, b wire.GuardianRequest) int { return len(a.Path) - len(b.Path) })
	c.mu.Lock()
	defer c.mu.Unlock()
	// A guardian that does not answer must not hang srt's start-up.
	c.conn.SetDeadline(time.Now().Add(15 * time.Second))
	defer c.conn.SetDeadline(time.Time{})
	var buf []byte
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		buf = append(append(buf, b...), '\n')
	}
	if _, err := c.conn.Write(buf); err != nil {
		return fmt.Errorf("guardian: %w", err)
	}
	var first error
	for _, r := range reqs {
		line, err := c.rd.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("guardian: %w", err)
		}
		var rep wire.GuardianReply
		if err := json.Unmarshal(line, &rep); err != nil {
			return fmt.Errorf("guardian reply: %w", err)
		}
		if rep.Error != "" && first == nil {
			first = fmt.Errorf("%s: %s", r.Path, rep.Error)
		}
	}
	return first
}

// Watch has the guardian wait for pid to be gone before it removes
// anything: bubblewrap first, which leads its own process group (the
// guardian ends that group should srt die), then the sandbox's PID 1. A
// guardian that does not answer within 5 s fails it.
func (c *Client) Watch(pid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.conn.SetDeadline(time.Time{})
	_, err := c.call(wire.GuardianRequest{Op: wire.GuardianWatch, PIDs: []int{pid}})
	return err
}

// Finish tells the guardian the sandbox is over and waits for its
// cleanup; its error is the guardian's exit status.
func (c *Client) Finish() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// "done" says srt saw bubblewrap end; without it the guardian knows srt
	// died and ends bubblewrap's process group itself.
	c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	c.call(wire.GuardianRequest{Op: wire.GuardianDone})
	c.conn.Close()
	return c.cmd.Wait()
}
