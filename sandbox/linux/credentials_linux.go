package linux

import (
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/wire"
)

// maskedFiles returns the bubblewrap options that show each of p's
// masked credential files (policy.Policy.MaskedFiles) readable in the
// policy as its masked copy: a sealed memfd (passed with addFD) mounted
// read-only over the file's resolved path with the file's own mode
// without write bits (--perms, --ro-bind-data). They come after the
// plan's own options, so that no bind of the plan (the file's
// write-deny, a write root) lands over the copy; the file is write-denied
// (policy), so its parents are pinned and the mount point can be neither
// renamed nor removed. It also returns the paths shown, whose plan mount
// checks no longer apply (the copy is over them). A confined view is
// refused: its mounts put host paths at other guest paths.
func maskedFiles(p *policy.Policy, plan fsplan.Plan, addFD func(*os.File) int) ([]string, []string, error) {
	if len(p.MaskedFiles) == 0 {
		return nil, nil, nil
	}
	if plan.Mapping.Confined {
		return nil, nil, fmt.Errorf("%s: masked credential files are not supported in a confined view", p.MaskedFiles[0].Rule)
	}
	var args, shown []string
	for _, mf := range p.MaskedFiles {
		if !p.Readable(mf.Path) {
			continue // denied: nothing of it is shown
		}
		f, err := memfile("srt-masked-credential", mf.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", mf.Rule, err)
		}
		args = append(args, "--perms", fmt.Sprintf("%04o", mf.Perm.Perm()), "--ro-bind-data", strconv.Itoa(addFD(f)), mf.Path)
		shown = append(shown, mf.Path)
	}
	return args, shown, nil
}

// withoutMasked drops the mount checks of the paths a masked copy is
// mounted over (maskedFiles): PID 1 would find the copy there, not the
// file the plan bound.
func withoutMasked(checks []wire.MountCheck, shown []string) []wire.MountCheck {
	return slices.DeleteFunc(checks, func(c wire.MountCheck) bool { return slices.Contains(shown, c.Guest) })
}
