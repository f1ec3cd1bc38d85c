package supervisor

// truncate(2) of a name (ftruncate on a descriptor is not notified: the
// descriptor was checked when it was opened).

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// truncateObj performs truncate(2) on obj, a checked existing name.
func truncateObj(c *creator, obj int, length int64) verdict {
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return failed(errnoOf(err))
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return failed(unix.EISDIR)
	default:
		return failed(unix.EINVAL)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
	if err != nil {
		return failed(unix.ENOENT)
	}
	if r := c.names.denied(real, kExisted); r != "" {
		if readOnlyMount(obj) {
			return failed(unix.EROFS)
		}
		return refused(r, real)
	}
	if r := c.git.dirRuleAt(c.res.root, real, kExisted); r != "" {
		return refused(r, real)
	}
	wfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return failed(errnoOf(err))
	}
	defer unix.Close(wfd)
	return done(unix.Ftruncate(wfd, length))
}
