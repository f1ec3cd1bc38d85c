package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/internal/cgroup"
	"github.com/srt-go/srt/port"
)

// srtd's memory limits (issue 16, "killed says why, including OOM"):
// each native session in a memory cgroup of its own, every process of
// the sandbox in it, an OOM kill reported as killed/oom.

const mib = 1 << 20

// TestSrtdOOMKilled: a session limited to 64 MiB that allocates 512 MiB
// ends its exec with killed, reason oom, and stays usable; a command
// under the limit exits 0; a timeout still says timeout; every process
// of the sandbox, one forked into the background too, is in the
// session's cgroup; a PID 1 killed by the OOM killer puts the session in
// error saying so; destroy removes the cgroup. As root srtd uses its own
// cgroup; as the unprivileged user, one root delegated to it
// (--cgroup-parent).
func TestSrtdOOMKilled(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ctx := context.Background()
		var d *srtd
		if u.direct {
			d = startSrtd(t, u, "--memory-limit", "1G")
		} else {
			d = startSrtd(t, u, "--memory-limit", "1G", "--cgroup-parent", delegatedCgroup(t, u))
		}
		if !strings.Contains(d.stderr(), "memory limit") || !strings.Contains(d.stderr(), "mechanism=\"cgroup v") {
			t.Errorf("no start-up line naming the memory-limit mechanism in\n%s", d.stderr())
		}
		h, err := d.c.Launch(ctx, port.Spec{SessionID: "oom", WorkspaceID: "w", MemoryLimitBytes: 64 * mib}, port.BackendNative)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := h.Details["cgroup"].(string)
		if n, _ := h.Details["memoryLimitBytes"].(float64); n != 64*mib || dir == "" || !strings.Contains(fmt.Sprint(h.Details["memoryLimit"]), "cgroup v") {
			t.Fatalf("details %v; want memoryLimitBytes %d, a cgroup and the mechanism", h.Details, 64*mib)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("session cgroup %s: %v", dir, err)
		}

		ev := lastEvent(t, d, "oom", client.ExecRequest{Argv: []string{"python3", "-c", "b = bytearray(512 << 20); print('survived')"}})
		if ev.Type != port.EventKilled || ev.Reason != "oom" {
			t.Errorf("512 MiB under 64 MiB ended with %s %q; want killed, reason oom", ev.Type, ev.Reason)
		}
		if out, code := d.sh(t, "oom", "echo still-here"); code != 0 || !strings.Contains(out, "still-here") {
			t.Errorf("the next exec: %d %s", code, out)
		}
		if out, code := d.sh(t, "oom", "python3 -c 'b = bytearray(8 << 20); print(len(b))'"); code != 0 || !strings.Contains(out, "8388608") {
			t.Errorf("8 MiB under 64 MiB: %d %s", code, out)
		}
		ev = lastEvent(t, d, "oom", client.ExecRequest{Argv: []string{"sleep", "30"}, TimeoutMs: 300})
		if ev.Type != port.EventKilled || ev.Reason != "timeout" {
			t.Errorf("a timeout ended with %s %q; want killed, reason timeout", ev.Type, ev.Reason)
		}

		// No escape: whatever the sandbox forks, and what it leaves behind
		// in the background, is in the cgroup.
		if out, code := d.sh(t, "oom", "setsid sleep 31.25 >/dev/null 2>&1 & sleep 31.5 >/dev/null 2>&1 & echo forked"); code != 0 {
			t.Fatalf("background processes: %d %s", code, out)
		}
		h, _ = d.c.Get(ctx, "oom")
		bwrap := int(h.Details["bwrapPid"].(float64))
		// The shell has returned, but its background children may not
		// have executed sleep yet: wait until both show as sleeps.
		sleeps := func(procs []int) (n int) {
			for _, pid := range procs {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if strings.HasPrefix(string(cmd), "sleep\x00") || strings.Contains(string(cmd), "\x00sleep\x00") {
					n++
				}
			}
			return n
		}
		var procs []int
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if procs, err = (&cgroupDir{dir}).procs(); err != nil {
				t.Fatal(err)
			}
			if sleeps(procs) >= 2 || time.Now().After(deadline) {
				break
			}
		}
		tree := descendants(bwrap)
		if len(tree) < 3 {
			t.Errorf("bubblewrap %d has descendants %v; want PID 1 and both sleeps", bwrap, tree)
		}
		for _, pid := range append(tree, bwrap) {
			if !slices.Contains(procs, pid) {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				t.Errorf("pid %d (%q), of the sandbox, is not in %s/cgroup.procs %v", pid, cmd, dir, procs)
			}
		}
		if found := sleeps(procs); found != 2 {
			t.Errorf("the two background sleeps: %d of them in cgroup.procs %v", found, procs)
		}

		if _, err := d.c.Destroy(ctx, "oom"); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("session cgroup %s after destroy: %v", dir, err)
		}

		// PID 1 itself the OOM killer's victim: the session is over, in
		// error, and says why.
		// PID 1 is not dumpable, so the sandbox cannot raise its score;
		// the test, as root on the host, does, once the command is forked
		// (it would inherit the score) and before it allocates.
		h, err = d.c.Launch(ctx, port.Spec{SessionID: "pid1", WorkspaceID: "w", MemoryLimitBytes: 64 * mib}, port.BackendNative)
		if err != nil {
			t.Fatal(err)
		}
		pid1 := int(h.Details["pid1"].(float64))
		events, err := d.c.Exec(ctx, "pid1", client.ExecRequest{Argv: []string{"python3", "-c", "import time; time.sleep(1); b = bytearray(512 << 20)"}})
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range events {
			if err != nil {
				t.Fatal(err)
			}
			if e.Type == port.EventReady {
				if err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid1), []byte("1000"), 0); err != nil {
					t.Fatal(err)
				}
			}
			ev = e
		}
		if ev.Type != port.EventKilled || ev.Reason != "oom" {
			t.Errorf("the exec when PID 1 was OOM-killed ended with %s %q; want killed, reason oom", ev.Type, ev.Reason)
		}
		var st port.Handle
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if st, err = d.c.Get(ctx, "pid1"); err != nil || st.State == port.StateError {
				break
			}
		}
		if st.State != port.StateError || !strings.Contains(st.Error, "OOM") {
			t.Errorf("after PID 1's OOM kill: %s %q; want error saying OOM", st.State, st.Error)
		}
		d.c.Destroy(ctx, "pid1")
	})
}

// TestSrtdMemoryLimitRefusals: above the server's limit is a 400 naming
// memoryLimitBytes; where srtd has no cgroup it can use (the
// unprivileged user without a delegated one), an explicit limit is a 422
// saying why, and a launch without one runs with details saying the
// limit is unavailable and why, after one Warn line at start.
func TestSrtdMemoryLimitRefusals(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ctx := context.Background()
		d := startSrtd(t, u, "--memory-limit", "128M")
		_, err := d.c.Launch(ctx, port.Spec{SessionID: "big", WorkspaceID: "w", MemoryLimitBytes: 256 * mib}, port.BackendNative)
		if ce, ok := err.(*client.Error); !ok || ce.Status != 400 || ce.Field != "memoryLimitBytes" {
			t.Errorf("above the server's limit: %v; want 400 naming memoryLimitBytes", err)
		}
		_, err = d.c.Launch(ctx, port.Spec{SessionID: "tiny", WorkspaceID: "w", MemoryLimitBytes: 4096}, port.BackendNative)
		if ce, ok := err.(*client.Error); !ok || ce.Status != 400 || ce.Field != "memoryLimitBytes" {
			t.Errorf("4096 bytes: %v; want 400 naming memoryLimitBytes", err)
		}
		_, err = d.c.Launch(ctx, port.Spec{SessionID: "none", WorkspaceID: "w", MemoryLimitBytes: 64 * mib}, port.BackendNone)
		if ce, ok := err.(*client.Error); !ok || ce.Status != 422 {
			t.Errorf("backend none with a limit: %v; want 422", err)
		}
		if u.direct {
			return // root has its own cgroup: TestSrtdOOMKilled
		}
		if !strings.Contains(d.stderr(), "level=WARN") || !strings.Contains(d.stderr(), "memory limit: unavailable") {
			t.Errorf("no Warn line about the unavailable memory limit in\n%s", d.stderr())
		}
		_, err = d.c.Launch(ctx, port.Spec{SessionID: "asks", WorkspaceID: "w", MemoryLimitBytes: 64 * mib}, port.BackendNative)
		if ce, ok := err.(*client.Error); !ok || ce.Status != 422 || !strings.Contains(ce.Message, "memoryLimitBytes") || !strings.Contains(ce.Message, "no memory cgroup") {
			t.Errorf("an explicit limit without a cgroup: %v; want 422 saying why", err)
		}
		h, err := d.c.Launch(ctx, port.Spec{SessionID: "dflt", WorkspaceID: "w"}, port.BackendNative)
		if err != nil {
			t.Fatal(err)
		}
		if m := fmt.Sprint(h.Details["memoryLimit"]); !strings.HasPrefix(m, "unavailable: ") || len(m) < len("unavailable: ")+10 {
			t.Errorf("details.memoryLimit %q; want unavailable: <why>", m)
		}
		if out, code := d.sh(t, "dflt", "echo ran"); code != 0 || !strings.Contains(out, "ran") {
			t.Errorf("a session without the default limit: %d %s", code, out)
		}
	})
}

// delegatedCgroup is a memory cgroup root makes for u and delegates to
// it (the directory and its cgroup.procs, tasks and, on v2,
// cgroup.subtree_control owned by u), below the tests' own; removed at
// the end of the test.
func delegatedCgroup(t *testing.T, u *account) string {
	t.Helper()
	p, err := cgroup.Find("")
	if err != nil {
		t.Skipf("no memory cgroup hierarchy root can delegate from: %v", err)
	}
	if p.Version() == cgroup.V2 {
		// Delegation containment (cgroup-v2.rst) would need srtd itself
		// inside the delegated cgroup; this host layout is not covered.
		t.Skip("cgroup v2 delegation needs srtd started inside the delegated cgroup; not covered here")
	}
	dir := filepath.Join(p.Dir(), fmt.Sprintf("srt-e2e-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// srtd has stopped (its cleanup ran first): what is left is empty.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the delegated cgroup: %v", err)
		}
	})
	for _, f := range []string{"", "cgroup.procs", "tasks", "cgroup.subtree_control"} {
		if err := os.Chown(filepath.Join(dir, f), u.uid, u.gid); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return dir
}

// lastEvent runs req in session id and returns its last event.
func lastEvent(t *testing.T, d *srtd, id string, req client.ExecRequest) port.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events, err := d.c.Exec(ctx, id, req)
	if err != nil {
		t.Fatal(err)
	}
	var last port.Event
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	return last
}

type cgroupDir struct{ dir string }

func (c *cgroupDir) procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out, nil
}

// descendants are the pids whose chain of parents (/proc/PID/stat)
// reaches root.
func descendants(root int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for pid := range parent {
		for a, n := parent[pid], 0; a > 1 && n < 64; a, n = parent[a], n+1 {
			if a == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// tcpFill makes pairs of loopback TCP connections inside the sandbox with
// big buffers, fills them without reading, and prints the bytes queued.
const tcpFill = `
import socket, sys
pairs, total = [], 0
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(512)
for i in range(int(sys.argv[1])):
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    try:
        c.connect(ls.getsockname())
    except OSError:
        break
    s, _ = ls.accept()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    c.setblocking(False)
    chunk = b"x" * (1 << 16)
    while True:
        try:
            n = c.send(chunk)
        except (BlockingIOError, OSError):
            break
        total += n
    pairs.append((c, s))
print(total)
`

// TestSrtdMemoryLimitSocketBuffers: a session's TCP buffers count against
// its memory limit (cgroup v1 charges them only with
// memory.kmem.tcp.limit_in_bytes set): a session limited to 64 MiB cannot
// queue hundreds of MiB in loopback connections it never reads, which
// would exhaust the host's tcp_mem for every other process.
func TestSrtdMemoryLimitSocketBuffers(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		var d *srtd
		if u.direct {
			d = startSrtd(t, u, "--memory-limit", "1G")
		} else {
			d = startSrtd(t, u, "--memory-limit", "1G", "--cgroup-parent", delegatedCgroup(t, u))
		}
		if _, err := d.c.Launch(context.Background(), port.Spec{SessionID: "tcp", WorkspaceID: "w", MemoryLimitBytes: 64 * mib}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		out, errb, code, err := d.c.Run(context.Background(), "tcp", client.ExecRequest{Argv: []string{"python3", "-c", tcpFill, "100"}, TimeoutMs: 120000})
		if err != nil {
			t.Fatal(err)
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		// Killed (137) is within the limit too; otherwise the queued
		// bytes must stay near it: the limit, with room for the kernel's
		// rounding, not the ~8 MiB per pair the buffers would hold.
		if code != 137 && (perr != nil || n > 2*64*mib) {
			t.Errorf("queued %q bytes (code %d, stderr %s) in TCP buffers under a 64 MiB limit; want at most ~%d", out, code, errb, 2*64*mib)
		}
		t.Logf("queued %d bytes, code %d", n, code)
	})
}
