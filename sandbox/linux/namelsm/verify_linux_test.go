package namelsm

import (
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// TestVerifyCheck: the verifier accepts the LSM program's check() (the
// dentry walk, the matching and the record), loaded in a kprobe program
// where the kernel refuses LSM programs, and says what it costs to
// verify once; the LSM object verifies it once per hook (8).
func TestVerifyCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program needs root")
	}
	spec, err := loadVerifytest()
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		t.Fatalf("the verifier refuses check(): %v", err)
	}
	defer coll.Close()
	for _, p := range coll.Programs {
		for _, l := range strings.Split(p.VerifierLog, "\n") {
			if strings.HasPrefix(l, "processed") || strings.HasPrefix(l, "verification time") {
				t.Log(l)
			}
		}
	}
}
