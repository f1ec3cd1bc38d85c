package supervisor

import "testing"

// TestGitConfigHarmless: the keys and values a new .git/config may hold
// (what git init, clone, commit and ordinary git config write), and the
// spellings that would make git run something.
func TestGitConfigHarmless(t *testing.T) {
	for _, tc := range []struct {
		conf string
		ok   bool
	}{
		{"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n", true},
		{"[remote \"origin\"]\n\turl = /srv/src\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", true},
		{"[user]\n\temail = a@b\n\tname = \"A B\"\n", true},
		{"[core]\n\thooksPath = /tmp\n", false},
		{"[core]\n\tfsmonitor = evil\n", false},
		{"[include]\n\tpath = ../x\n", false},
		{"[includeIf \"gitdir:/\"]\n\tpath = x\n", false},
		{"[alias]\n\tst = !evil\n", false},
		{"[filter \"x\"]\n\tclean = evil\n", false},
		{"[remote \"o\"]\n\turl = ext::sh -c evil\n", false},
		{"[remote \"o\"]\n\turl = e\"x\"t::sh -c evil\n", false},
		{"[remote \"o\"]\n\turl = \"e\\x74::sh\"\n", false},
		{"[remote \"o\"]\n\turl = -upload-pack=evil\n", false},
		{"[core]\n\tfsmonitor \\\n= evil\n", false},
		{"[core.x]\n\tbare = false\n", false},
		{"[CORE]\n\tHooksPath = /tmp\n", false},
		// refs, index and objects world-writable at the next commit
		{"[core]\n\tsharedRepository = 0777\n", false},
	} {
		if got := gitConfigHarmless([]byte(tc.conf)); got != tc.ok {
			t.Errorf("gitConfigHarmless(%q) = %v, want %v", tc.conf, got, tc.ok)
		}
	}
}

// TestDeniedNames: the rules the creator checks, on real paths.
func TestDeniedNames(t *testing.T) {
	c := &creator{tmpdir: "/tmp/srt-0/tmp"}
	for _, p := range []string{"**/.bashrc", "**/.git/hooks/**", "**/.git/config", "**/.env", "/w/secrets/**"} {
		c.addRule(p, p)
	}
	for _, tc := range []struct {
		path string
		kind int
		deny bool
	}{
		{"/w/a/b/c/d/e/f/.bashrc", kFile, true},
		{"/w/.bashrc.bak", kFile, false},
		{"/w/r/.git/hooks", kDir, false},
		{"/w/r/.git/hooks/pre-commit", kFile, true},
		{"/w/r/.git/hooks/pre-commit.sample", kFile, false},
		{"/w/r/.git/hooks/pre-commit.sample", kOther, true},
		{"/w/r/.git/config", kFile, true},
		{"/w/r/.git/config", kConfig, false},
		{"/w/x/.env", kExisted, true},
		{"/w/secrets", kDir, true},
		{"/w/secretsx", kDir, false},
		{"/w/sub/.git", kFile, true}, // a gitdir: file
		{"/w/sub/.git", kDir, false},
		{"/w/sub/.git", kSource, false},
		{"/tmp/srt-0/tmp/.env", kFile, false}, // the private TMPDIR
		{"/dev/shm/.bashrc", kFile, false},
	} {
		if got := c.denied(tc.path, tc.kind) != ""; got != tc.deny {
			t.Errorf("denied(%s, kind %d) = %v, want %v", tc.path, tc.kind, got, tc.deny)
		}
	}
}
