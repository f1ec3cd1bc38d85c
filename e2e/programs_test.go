package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGit runs git in the sandbox: a new repository in an allowed
// subdirectory works end to end; in a repository that existed before the
// run, hooks and config cannot be changed.
func TestGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git not installed: %v", err)
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		t.Run("init-add-commit", func(t *testing.T) {
			t.Parallel()
			dir := u.workDir(t)
			out, errOut, code := sh(t, u, dir, writeSettings, `mkdir sub && cd sub && git init -q && echo hi > f && git add f &&
git -c user.name=e2e -c user.email=e2e@example.com commit -qm first && git log --format=%s`)
			if code != 0 || out != "first\n" {
				t.Fatalf("status %d stdout %q; stderr %s", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(dir, "sub/.git/HEAD")); err != nil {
				t.Errorf("the host does not see the new repository: %v", err)
			}
		})
		t.Run("existing-repo-hooks-and-config", func(t *testing.T) {
			t.Parallel()
			dir := u.workDir(t)
			init := u.command(context.Background(), dir, nil, "git", "init", "-q", ".")
			if out, err := init.CombinedOutput(); err != nil {
				t.Fatalf("git init on the host: %v %s", err, out)
			}
			r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"sh", "-c", `
echo 'touch /tmp/pwned' > .git/hooks/pre-commit && echo hook:ALLOWED || echo hook:refused
chmod +x .git/hooks/pre-commit.sample && echo chmod:ALLOWED || echo chmod:refused
git config core.hooksPath x && echo hooksPath:ALLOWED || echo hooksPath:refused
git config core.fsmonitor 'touch /tmp/pwned' && echo fsmonitor:ALLOWED || echo fsmonitor:refused
echo hi > f && git add f && git -c user.name=e2e -c user.email=e2e@example.com commit -qm inside && echo commit:ok`}}
			r.argv(t)
			before := snapshot(t, filepath.Join(dir, ".git/hooks"))
			cfg, _ := os.ReadFile(filepath.Join(dir, ".git/config"))
			out, errOut, code := r.run(t)
			if code != 0 {
				t.Fatalf("status %d: %s", code, errOut)
			}
			want := "hook:refused\nchmod:refused\nhooksPath:refused\nfsmonitor:refused\ncommit:ok\n"
			if out != want {
				t.Errorf("stdout %q, want %q; stderr %s", out, want, errOut)
			}
			assertUnchanged(t, filepath.Join(dir, ".git/hooks"), before)
			if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); string(b) != string(cfg) {
				t.Errorf(".git/config changed on the host:\n%s", b)
			}
		})
	})
}

// TestPython writes from python3 inside and outside the write root and
// checks the exception the program sees.
func TestPython(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		w := u.workDir(t)
		proj, outside := filepath.Join(w, "proj"), filepath.Join(w, "outside")
		u.mkdir(t, proj)
		u.mkdir(t, outside)
		r := srtRun{u: u, dir: proj, settings: writeSettings, args: []string{"python3", "-c", fmt.Sprintf(`
open("in.txt", "w").write("inside\n")
try:
    open(%q, "w").write("x")
    print("outside:ALLOWED")
except OSError as e:
    print("outside:%%s:%%d:%%s" %% (type(e).__name__, e.errno, e.strerror))
`, filepath.Join(outside, "out.txt"))}}
		r.argv(t)
		before := snapshot(t, w)
		out, errOut, code := r.run(t)
		if code != 0 || out != "outside:OSError:30:Read-only file system\n" {
			t.Errorf("status %d stdout %q, want the OSError EROFS; stderr %s", code, out, errOut)
		}
		assertUnchanged(t, w, before, filepath.Join(proj, "in.txt"))
		if b, _ := os.ReadFile(filepath.Join(proj, "in.txt")); string(b) != "inside\n" {
			t.Errorf("host in.txt = %q", b)
		}
	})
}

const npmCache = "/tmp/srt-e2e-npm"

var (
	mcpOnce sync.Once
	mcpErr  error
)

// mcpServer returns the filesystem MCP server's entry point, installing
// it from the npm registry once into npmCache.
func mcpServer(t *testing.T) string {
	t.Helper()
	entry := filepath.Join(npmCache, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	mcpOnce.Do(func() {
		if _, err := os.Stat(entry); err == nil {
			return
		}
		os.MkdirAll(npmCache, 0o755)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", npmCache, "@modelcontextprotocol/server-filesystem").CombinedOutput()
		if err != nil {
			mcpErr = fmt.Errorf("npm install @modelcontextprotocol/server-filesystem: %v: %s", err, out)
		}
		exec.Command("chmod", "-R", "a+rX", npmCache).Run()
	})
	if mcpErr != nil {
		if os.Getenv("SRT_E2E_ALLOW_SKIP") == "1" {
			t.Skipf("SRT_E2E_ALLOW_SKIP=1 and %v", mcpErr)
		}
		t.Fatal(mcpErr)
	}
	return entry
}

// TestMCPFilesystemServer runs the MCP filesystem server under srt and
// speaks JSON-RPC to it: write_file into the allowed folder succeeds,
// into a folder the server serves but srt does not let it write fails
// with an error the client sees, and the host folder is unchanged.
func TestMCPFilesystemServer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not installed: %v", err)
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		entry := mcpServer(t)
		w := u.workDir(t)
		allowed, outside := filepath.Join(w, "allowed"), filepath.Join(w, "outside")
		u.mkdir(t, allowed)
		u.write(t, filepath.Join(outside, "keep.txt"), "keep\n")
		r := srtRun{u: u, dir: w, settings: `{"filesystem":{"allowWrite":["./allowed"]}}`, args: []string{"node", entry, allowed, outside}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := u.command(ctx, w, nil, r.argv(t)...)
		beforeOut := snapshot(t, outside)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			stdin.Close()
			cmd.Wait()
		}()
		rd := bufio.NewReader(stdout)
		call := func(id int, method string, params any) map[string]any {
			t.Helper()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			if _, err := stdin.Write(append(b, '\n')); err != nil {
				t.Fatalf("writing to the server: %v; stderr: %s", err, errOut.String())
			}
			for {
				line, err := rd.ReadBytes('\n')
				if err != nil {
					t.Fatalf("reading the server's reply to %s: %v; stderr: %s", method, err, errOut.String())
				}
				var m map[string]any
				if json.Unmarshal(line, &m) == nil && m["id"] == float64(id) {
					return m
				}
			}
		}
		init := call(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "srt-e2e", "version": "1"}})
		if init["result"] == nil {
			t.Fatalf("initialize: %v", init)
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
		stdin.Write(append(b, '\n'))

		write := func(id int, path string) (isErr bool, text string) {
			m := call(id, "tools/call", map[string]any{"name": "write_file", "arguments": map[string]any{"path": path, "content": "from mcp\n"}})
			if e, ok := m["error"]; ok {
				return true, fmt.Sprint(e)
			}
			res, _ := m["result"].(map[string]any)
			isErr, _ = res["isError"].(bool)
			raw, _ := json.Marshal(res["content"])
			return isErr, string(raw)
		}
		if isErr, text := write(2, filepath.Join(allowed, "a.txt")); isErr {
			t.Errorf("write_file into the allowed folder failed: %s", text)
		}
		if b, _ := os.ReadFile(filepath.Join(allowed, "a.txt")); string(b) != "from mcp\n" {
			t.Errorf("host allowed/a.txt = %q", b)
		}
		isErr, text := write(3, filepath.Join(outside, "b.txt"))
		if !isErr {
			t.Errorf("write_file outside allowWrite succeeded: %s", text)
		} else if !hasAny(text, "EROFS", "read-only", "Read-only", "EACCES", "permission") {
			t.Errorf("the error does not say why: %s", text)
		}
		isErr, text = write(4, filepath.Join(outside, "keep.txt"))
		if !isErr {
			t.Errorf("write_file over a file outside allowWrite succeeded: %s", text)
		}
		assertUnchanged(t, outside, beforeOut)
	})
}

var _ = io.EOF
