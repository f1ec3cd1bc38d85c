package supervisor

// mkdir, mkdirat, mknod and mknodat.

import "golang.org/x/sys/unix"

// mkdirAt performs mkdir(2) of name w with mode.
func mkdirAt(c *creator, rq request, w where, mode uint64) verdict {
	if r := c.names.denied(w.real, kDir); r != "" {
		return refused(r, w.real)
	}
	if r := c.git.dirRule(w, kDir); r != "" {
		return refused(r, w.real)
	}
	c.setUmask(rq.pid)
	c.res.forgetDirs()
	return done(unix.Mkdirat(w.dir, w.name, c.mode(mode)))
}

// mknodAt performs mknod(2) of name w: mode holds the type and
// permissions, dev the device number.
func mknodAt(c *creator, rq request, w where, mode, dev uint64) verdict {
	kind := kOther
	if t := mode & unix.S_IFMT; t == 0 || t == unix.S_IFREG {
		kind = kFile
	}
	if r := c.names.denied(w.real, kind); r != "" {
		return refused(r, w.real)
	}
	if r := c.git.dirRule(w, kind); r != "" {
		return refused(r, w.real)
	}
	c.setUmask(rq.pid)
	return done(unix.Mknodat(w.dir, w.name, uint32(mode)&unix.S_IFMT|c.mode(mode), int(dev)))
}
