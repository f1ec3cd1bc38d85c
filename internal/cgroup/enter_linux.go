package cgroup

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// RunEnter is the v1 trampoline (Group.Prepare), run in the process that
// becomes the session's first: args are the descriptor of the cgroup's
// cgroup.procs, the program's path and its argv. It moves this process
// into the cgroup, closes the descriptor and executes the program; it
// never returns. When the move fails it exits 125 (srt's own failure,
// as env(1) uses it) without executing anything: never a session outside
// its limit.
func RunEnter(args []string) {
	if len(args) < 3 {
		fail(fmt.Errorf("want a descriptor, a path and argv; got %q", args))
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil || fd < 3 {
		fail(fmt.Errorf("descriptor %q", args[0]))
	}
	// One write(2) of this process's pid (cgroup-v1/memory.rst, 3:
	// "echo $$ > cgroup.procs"); it moves every thread of the process.
	if _, err := unix.Write(fd, []byte(strconv.Itoa(os.Getpid()))); err != nil {
		fail(err)
	}
	unix.Close(fd)
	err = unix.Exec(args[1], args[2:], os.Environ())
	fail(fmt.Errorf("executing %s: %w", args[1], err))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "srt: entering the session's memory cgroup: %v\n", err)
	os.Exit(125)
}
