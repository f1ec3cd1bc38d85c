package inside

// This file runs in the sandbox's PID 1 and in the Landlock stage.

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeOtherFDs marks every descriptor above 2 close-on-exec except keep,
// so nothing srt or bubblewrap held leaks into the command.
func closeOtherFDs(keep []int) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		kept := false
		for _, k := range keep {
			kept = kept || k == fd
		}
		if !kept {
			unix.CloseOnExec(fd)
		}
	}
}
