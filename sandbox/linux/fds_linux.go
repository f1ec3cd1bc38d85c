package linux

import "os"

// passThrough returns the start of an exec.Cmd's ExtraFiles that passes
// keep (descriptors above 2 of this process, Config.KeepFDs) to the child
// at the same numbers; the numbers in between are nil, so closed in the
// child. srt's own descriptors for the child are appended after it, so
// that none takes a number the user asked for.
func passThrough(keep []int) []*os.File {
	next := 3
	for _, fd := range keep {
		next = max(next, fd+1)
	}
	extra := make([]*os.File, next-3)
	for _, fd := range keep {
		extra[fd-3] = os.NewFile(uintptr(fd), "user")
	}
	return extra
}
