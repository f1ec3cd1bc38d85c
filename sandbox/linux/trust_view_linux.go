package linux

import (
	"fmt"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
)

// checkTrustShown refuses a plan in which the trust files of
// network.tlsTerminate (trustFiles, mounted after every step of plan)
// would not land on the sandbox's private TMPDIR tmpfs: the plan must
// mount a tmpfs at tmpdir, and no later step may mount over tmpdir or an
// ancestor of it (which would hide the tmpfs and put the bundle on
// whatever that step shows). In a confined view (srtd's sessions with
// masked credentials) the TMPDIR is the one path of the view that no bind
// can hold (port's checkGuests refuses such a guest path) and the plan
// mounts it last but for remounts; this states the invariant where the
// bundle relies on it. A nil tls needs nothing.
func checkTrustShown(tls *policy.TLS, plan fsplan.Plan, tmpdir string) error {
	if tls == nil {
		return nil
	}
	at := -1
	for i, op := range plan.Ops {
		switch {
		case op.Kind == fsplan.OpTmpfs && op.Dst == tmpdir:
			at = i
		case at >= 0 && op.Kind != fsplan.OpRemountRO && policy.Within(tmpdir, op.Dst):
			return fmt.Errorf("network.tlsTerminate: %s (%s) is mounted over the private TMPDIR %s that shows the trust bundle", op.Dst, op.Rule, tmpdir)
		}
	}
	if at < 0 {
		return fmt.Errorf("network.tlsTerminate: the sandbox's mount plan has no private TMPDIR at %s to show the trust bundle in", tmpdir)
	}
	return nil
}
