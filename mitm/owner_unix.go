//go:build unix

package mitm

import (
	"os"
	"syscall"
)

// ownerTrusted reports whether fi belongs to srt's own user or to root:
// a trust file another user owns (one left in /tmp, say) would let that
// user choose what srt trusts.
func ownerTrusted(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && (st.Uid == 0 || st.Uid == uint32(os.Getuid()))
}
