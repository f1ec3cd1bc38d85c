package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
)

// TestHostTrustedFiles writes, from inside a sandbox whose write roots
// are the project and the whole home directory, one file of every class
// of policy.HostTrusted (and every path of it that is not a glob), srt's
// own settings files, and the agents' project settings: each is a file a
// program on the host later runs or obeys (issue 14, items 1 and 5). Both
// ways: the file missing (it must not come into being) and present (it
// must keep its content). The host is checked afterwards.
func TestHostTrustedFiles(t *testing.T) {
	t.Parallel()
	var targets []string // relative to the home directory
	for _, c := range policy.HostTrusted() {
		for _, rel := range c.Home {
			rel = strings.Replace(rel, "python*", "python3.11", 1)
			if d, ok := strings.CutSuffix(rel, "/"); ok {
				rel = d + "/planted"
			}
			targets = append(targets, rel)
		}
	}
	// Project files of the agents, and the --settings file itself.
	targets = append(targets, "proj/.claude/settings.json", "proj/.claude/settings.local.json", "proj/sub/.hg/hgrc", "proj/settings.json")
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			for _, present := range []bool{false, true} {
				name := mode + "/missing"
				if present {
					name = mode + "/present"
				}
				t.Run(name, func(t *testing.T) {
					w := u.workDir(t)
					home := filepath.Join(w, "home")
					proj := filepath.Join(home, "proj")
					u.mkdir(t, proj)
					u.mkdir(t, filepath.Join(proj, "sub/.hg"))
					fsJSON := `{"filesystem":{"allowWrite":[".","~"]}}`
					if mode == "rules-off" {
						fsJSON = `{"filesystem":{"allowWrite":[".","~"],"enforceNamesAtCreation":false}}`
					}
					u.write(t, filepath.Join(proj, "settings.json"), fsJSON)
					if present {
						for _, rel := range targets {
							if rel != "proj/settings.json" {
								u.write(t, filepath.Join(home, rel), "original\n")
							}
						}
					}
					var script strings.Builder
					for _, rel := range targets {
						p := filepath.Join(home, rel)
						script.WriteString("mkdir -p '" + filepath.Dir(p) + "' 2>/dev/null; (echo planted >> '" + p + "') 2>/dev/null && echo 'WROTE " + rel + "'\n")
					}
					script.WriteString("echo ok > ordinary.txt && echo ordinary-ok\n")
					r := srtRun{u: u, dir: proj, env: []string{"HOME=" + home}, args: []string{"sh", "-c", script.String()},
						pre: []string{"-s", filepath.Join(proj, "settings.json")}}
					out, errOut, code := r.run(t)
					if code != 0 || !strings.Contains(out, "ordinary-ok") {
						t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
					}
					if strings.Contains(out, "WROTE") {
						t.Errorf("host-trusted files written from the sandbox:\n%s", out)
					}
					for _, rel := range targets {
						b, err := os.ReadFile(filepath.Join(home, rel))
						switch {
						case rel == "proj/settings.json":
							if string(b) != fsJSON {
								t.Errorf("the settings file changed: %q", b)
							}
						case present && string(b) != "original\n":
							t.Errorf("~/%s changed on the host: %q", rel, b)
						case !present && err == nil && strings.Contains(string(b), "planted"):
							t.Errorf("~/%s was created on the host: %q", rel, b)
						}
					}
				})
			}
		}
	})
}
