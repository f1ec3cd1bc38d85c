//go:build unix

package main

import "syscall"

// raiseNoFile raises RLIMIT_NOFILE's soft limit to the hard one and
// returns both. Go's runtime already raised it to the hard limit less one
// at start (package syscall's init, go.dev/issue/46279) and restores the
// original soft limit in the processes srtd starts; srtd only raises it
// itself when that did not happen, which also stops the restoring.
func raiseNoFile() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max && rl.Max-rl.Cur > 1 {
		want := rl
		want.Cur = rl.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			rl = want
		}
		// Refused (macOS refuses an unlimited one): the limit stays.
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}
