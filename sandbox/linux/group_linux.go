package linux

import (
	"bufio"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// This file runs in srt, before the sandbox starts.

// privateGroup reports whether srt's primary group is the user's own: a
// group of the user's name (or root's) that lists no other member in
// /etc/group, as Debian's user private groups are. Then a group-writable
// file is writable by the user only, and the sandbox may make one (a
// umask of 002 is the default there); otherwise group write is refused
// like others' (seccomp.Options.RefuseGroupWrite). Unknown means shared.
func privateGroup() bool {
	u, err := user.Current()
	if err != nil {
		return false
	}
	f, err := os.Open("/etc/group")
	if err != nil {
		return false
	}
	defer f.Close()
	gid := strconv.Itoa(os.Getegid())
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) != 4 || fields[2] != gid {
			continue
		}
		if fields[0] != u.Username {
			return false
		}
		for _, m := range strings.Split(fields[3], ",") {
			if m != "" && m != u.Username {
				return false
			}
		}
		return true
	}
	return false
}
