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
		{"", true},
		{"# a comment\n; another\n\n", true},
		{"[core] # trailing comment\n\tbare = false\n", true},
		{"[core] bare = false\n", false}, // a key on the header line
		{"[core\n\tbare = false\n", false},
		{"[remote origin]\n\turl = x\n", false},     // unquoted subsection
		{"[remote \"o\\\"x\"]\n\turl = x\n", false}, // an escape in it
		{"[branch \"main\"]\n\tmerge = refs/heads/main\n", true},
		{"[remote \"o\"]\n\turl = \"/srv/src\"\n", true},
		{"[remote \"o\"]\n\turl = fd::3\n", false},
		{"[remote \"o\"]\n\turl = EXT::sh\n", false},
		{"[remote \"o\"]\n\tuploadpack = evil\n", false},
		{"[core]\n\tsshCommand = evil\n", false},
		{"[core]\n\tpager = evil\n", false},
		{"[core]\n\teditor = evil\n", false},
		{"[diff \"x\"]\n\ttextconv = evil\n", false},
		{"[credential]\n\thelper = evil\n", false},
		{"[gpg]\n\tprogram = evil\n", false},
		{"[core]\n\tbare\n", true}, // a key without a value is true: a harmless key still
		{"[core]\n\tbäre = false\n", false},
		{"[user]\n\tname = a\\\n", false}, // a continuation
	} {
		if got := gitConfigHarmless([]byte(tc.conf)); got != tc.ok {
			t.Errorf("gitConfigHarmless(%q) = %v, want %v", tc.conf, got, tc.ok)
		}
	}
}
