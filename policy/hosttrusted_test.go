package policy

import (
	"os"
	"strings"
	"testing"
)

// TestHostTrustedDoc: SECURITY.md's table of host-trusted files lists
// every entry of hostTrusted, so that the documented table is the code's.
func TestHostTrustedDoc(t *testing.T) {
	b, err := os.ReadFile("../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range HostTrusted() {
		if !strings.Contains(doc, "| "+c.Class+" |") {
			t.Errorf("SECURITY.md has no row for class %q", c.Class)
		}
		for _, h := range c.Home {
			if !strings.Contains(doc, "`"+h+"`") {
				t.Errorf("SECURITY.md does not list %s (class %s)", h, c.Class)
			}
		}
	}
}
