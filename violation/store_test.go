package violation

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func v(key, target string) Violation {
	return Violation{Action: FileWriteCreate, Target: target, Reason: "outside the write roots", Key: key}
}

func targets(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Target)
	}
	return out
}

func TestStoreRing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  int
		add       int
		limit     int
		wantCount int
		want      []string // targets returned by Violations(limit)
	}{
		{"empty", 3, 0, 0, 0, nil},
		{"under-capacity", 3, 2, 0, 2, []string{"/0", "/1"}},
		{"exactly-full", 3, 3, 0, 3, []string{"/0", "/1", "/2"}},
		{"wraps-oldest-evicted", 3, 5, 0, 3, []string{"/2", "/3", "/4"}},
		{"limit-takes-newest", 3, 5, 2, 3, []string{"/3", "/4"}},
		{"limit-above-count", 3, 2, 10, 2, []string{"/0", "/1"}},
		{"default-capacity", 0, 150, 0, DefaultCapacity, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(tc.capacity)
			for i := range tc.add {
				s.Add(v("k", fmt.Sprintf("/%d", i)))
			}
			if got := s.Count(); got != tc.wantCount {
				t.Errorf("Count = %d, want %d", got, tc.wantCount)
			}
			if got := s.TotalCount(); got != tc.add {
				t.Errorf("TotalCount = %d, want %d", got, tc.add)
			}
			got := targets(s.Violations(tc.limit))
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("Violations(%d) = %q, want %q", tc.limit, got, tc.want)
			}
			if len(got) > tc.wantCount {
				t.Errorf("Violations returned %d, ring holds %d", len(got), tc.wantCount)
			}
		})
	}
}

func TestStoreRawFilled(t *testing.T) {
	s := NewStore(1)
	s.Add(v("k", "/etc/x"))
	if got, want := s.Violations(0)[0].Raw, "deny file-write-create /etc/x (outside the write roots)"; got != want {
		t.Errorf("Raw = %q, want %q", got, want)
	}
}

func TestStoreForCommand(t *testing.T) {
	long := string(make([]byte, 200))
	for _, tc := range []struct {
		name string
		keys []string // one violation per key, target = index
		key  string
		want []string
	}{
		{"only-own", []string{"a", "b", "a"}, "a", []string{"/0", "/2"}},
		{"none", []string{"a"}, "b", nil},
		{"empty-key-matches-nothing", []string{"", "a"}, "", nil},
		// Keys longer than the reference's 100 characters that share a
		// prefix stay apart: keys are compared whole.
		{"long-shared-prefix", []string{long + "x", long + "y"}, long + "y", []string{"/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(10)
			for i, k := range tc.keys {
				s.Add(v(k, fmt.Sprintf("/%d", i)))
			}
			if got := targets(s.ForCommand(tc.key)); !slices.Equal(got, tc.want) {
				t.Errorf("ForCommand = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStoreAnnotate(t *testing.T) {
	s := NewStore(10)
	s.Add(v("a", "/etc/x"))
	s.Add(Violation{Action: NetworkOutbound, Target: "evil.com:443", Reason: "host is not on the allow list", Key: "a"})
	s.Add(v("b", "/other"))
	for _, tc := range []struct {
		name, key, stderr, want string
	}{
		{"with-violations", "a", "touch: cannot touch '/etc/x': Read-only file system",
			"touch: cannot touch '/etc/x': Read-only file system\n<sandbox_violations>\n" +
				"deny file-write-create /etc/x (outside the write roots)\n" +
				"deny network-outbound evil.com:443 (host is not on the allow list)\n" +
				"</sandbox_violations>"},
		{"empty-stderr", "b", "", "\n<sandbox_violations>\ndeny file-write-create /other (outside the write roots)\n</sandbox_violations>"},
		{"no-violations-unchanged", "c", "boom", "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Annotate(tc.key, tc.stderr); got != tc.want {
				t.Errorf("Annotate =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestStoreSubscribe(t *testing.T) {
	s := NewStore(10)
	ch, cancel := s.Subscribe(2)
	s.Add(v("k", "/1"))
	s.Add(v("k", "/2"))
	s.Add(v("k", "/3")) // buffer full: dropped for this subscriber, not blocked
	if got := s.Dropped(); got != 1 {
		t.Errorf("Dropped = %d, want 1", got)
	}
	if got := (<-ch).Target; got != "/1" {
		t.Errorf("first = %q", got)
	}
	if got := (<-ch).Target; got != "/2" {
		t.Errorf("second = %q", got)
	}
	if got := s.Count(); got != 3 {
		t.Errorf("the ring lost entries: Count = %d, want 3", got)
	}
	cancel()
	cancel() // idempotent
	if _, ok := <-ch; ok {
		t.Error("channel still open after cancel")
	}
	s.Add(v("k", "/4")) // no subscriber: must not panic on the closed channel
	if got := s.Dropped(); got != 1 {
		t.Errorf("Dropped after unsubscribe = %d, want 1", got)
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := NewStore(50)
	ch, cancel := s.Subscribe(1)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				s.Add(v(fmt.Sprint(g), fmt.Sprint(i)))
				s.ForCommand(fmt.Sprint(g))
			}
		}()
	}
	wg.Wait()
	cancel()
	for range ch {
	}
	if s.TotalCount() != 800 || s.Count() != 50 {
		t.Errorf("TotalCount %d Count %d, want 800 50", s.TotalCount(), s.Count())
	}
}

func TestIgnored(t *testing.T) {
	rules := map[string][]string{"*": {"/usr/bin"}, "git push": {"evil.com"}, "npm": {"/private/tmp"}}
	for _, tc := range []struct {
		name    string
		v       Violation
		command string
		want    bool
	}{
		{"star-matches-any-command", Violation{Action: FileWriteCreate, Target: "/usr/bin/x"}, "make", true},
		{"command-substring", Violation{Action: NetworkOutbound, Target: "evil.com:443"}, "git push origin", true},
		{"other-command-not-ignored", Violation{Action: NetworkOutbound, Target: "evil.com:443"}, "curl x", false},
		{"no-substring-match", Violation{Action: FileWriteCreate, Target: "/etc/x"}, "npm i", false},
		{"raw-line-matched", Violation{Raw: "deny file-write-create /private/tmp/x"}, "npm i", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ignored(tc.v, tc.command, rules); got != tc.want {
				t.Errorf("Ignored = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewKeyUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		k := NewKey()
		if len(k) != 22 || seen[k] {
			t.Fatalf("key %q: length %d or repeated", k, len(k))
		}
		seen[k] = true
	}
}
