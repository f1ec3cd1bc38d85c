//go:build srt_bpflsm

package linux

import (
	"os"
	"strings"
	"testing"

	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/wire"
)

// TestKernelNamesEligible: the runs that must use the supervisor say
// why, before anything is loaded.
func TestKernelNamesEligible(t *testing.T) {
	for _, v := range []string{"", "supervisor"} {
		t.Setenv(NameRulesEnv, v)
		if err := kernelNamesEligible(Config{}, &wire.InitSpec{}, fsplan.Mapping{}); err == nil || !strings.Contains(err.Error(), NameRulesEnv) {
			t.Errorf("%s=%q: %v, want the supervisor", NameRulesEnv, v, err)
		}
	}
	t.Setenv(NameRulesEnv, "kernel")
	if os.Geteuid() != 0 {
		if err := kernelNamesEligible(Config{}, &wire.InitSpec{}, fsplan.Mapping{}); err == nil || !strings.Contains(err.Error(), "not root") {
			t.Errorf("not root: %v", err)
		}
		return
	}
	nested := &wire.InitSpec{}
	nested.Seccomp.AllowNestedUserNamespaces = true
	if err := kernelNamesEligible(Config{}, nested, fsplan.Mapping{}); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("nested user namespaces: %v", err)
	}
	if err := kernelNamesEligible(Config{}, &wire.InitSpec{}, fsplan.Mapping{Confined: true}); err == nil || !strings.Contains(err.Error(), "confined") {
		t.Errorf("confined view: %v", err)
	}
	if err := kernelNamesEligible(Config{}, &wire.InitSpec{}, fsplan.Mapping{}); err != nil {
		t.Errorf("root, host view: %v", err)
	}
}
