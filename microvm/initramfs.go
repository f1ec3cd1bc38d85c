package microvm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// cpioWriter writes a "newc" cpio archive, the format the kernel unpacks
// into its rootfs (Documentation/driver-api/early-userspace/buffer-format.rst).
// It is uncompressed on purpose: under TCG decompressing in the guest costs
// more than reading the bigger file.
type cpioWriter struct {
	w   *bufio.Writer
	ino int
	err error
}

func newCPIO(w io.Writer) *cpioWriter { return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), ino: 1} }

func (c *cpioWriter) header(name string, mode uint32, size int) {
	if c.err != nil {
		return
	}
	c.ino++
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check.
	_, c.err = fmt.Fprintf(c.w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	if c.err == nil {
		_, c.err = c.w.WriteString(name + "\x00")
	}
	c.pad(110 + len(name) + 1)
}

func (c *cpioWriter) pad(n int) {
	if c.err == nil && n%4 != 0 {
		_, c.err = c.w.Write(make([]byte, 4-n%4))
	}
}

func (c *cpioWriter) dir(name string, perm uint32) { c.header(name, 0o040000|perm, 0) }

func (c *cpioWriter) symlink(name, target string) {
	c.header(name, 0o120000|0o777, len(target))
	if c.err == nil {
		_, c.err = c.w.WriteString(target)
	}
	c.pad(len(target))
}

func (c *cpioWriter) file(name string, perm uint32, data []byte) {
	c.header(name, 0o100000|perm, len(data))
	if c.err == nil {
		_, c.err = c.w.Write(data)
	}
	c.pad(len(data))
}

func (c *cpioWriter) hostFile(name string, perm uint32, path string) {
	if c.err != nil {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		c.err = err
		return
	}
	c.file(name, perm, b)
}

func (c *cpioWriter) close() error {
	c.header("TRAILER!!!", 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// initramfsSpec is what goes into the guest's root filesystem.
type initramfsSpec struct {
	Init    string   // static /init
	Modules []string // .ko files, load order
	Busybox string   // static busybox, or ""
	Applets []string // busybox applet names
	CACerts string   // host CA bundle, or ""
}

// writeInitramfs writes the guest root: /init, the modules and their
// list, busybox and its applets in /.srt/bin (last on PATH, so a share
// mounted on /usr wins), /bin/sh, a minimal /etc, and the empty mount
// points. Nothing of the host is in it but these files.
func writeInitramfs(w io.Writer, s initramfsSpec) error {
	c := newCPIO(w)
	for _, d := range []string{"bin", "dev", "etc", "etc/ssl", "etc/ssl/certs", "lib", "lib/srt",
		"mnt", "proc", "root", "run", "sys", "tmp", "usr", "usr/bin", "var", ".srt", ".srt/bin"} {
		perm := uint32(0o755)
		if d == "tmp" {
			perm = 0o1777
		} else if d == "root" {
			perm = 0o700
		}
		c.dir(d, perm)
	}
	c.hostFile("init", 0o755, s.Init)
	c.symlink(".srt/bin/srt-guest", "/init")
	var list []string
	for i, m := range s.Modules {
		name := fmt.Sprintf("lib/srt/%02d-%s", i, baseName(m))
		c.hostFile(name, 0o644, m)
		list = append(list, "/"+name)
	}
	if len(list) > 0 {
		c.file("lib/srt/modules.list", 0o644, []byte(strings.Join(list, "\n")+"\n"))
	}
	if s.Busybox != "" {
		c.hostFile(".srt/bin/busybox", 0o755, s.Busybox)
		applets := append([]string(nil), s.Applets...)
		sort.Strings(applets)
		for _, a := range applets {
			if a == "" || strings.Contains(a, "/") || a == "busybox" {
				continue
			}
			c.symlink(".srt/bin/"+a, "busybox")
		}
		c.symlink("bin/sh", "/.srt/bin/busybox")
		c.symlink("usr/bin/env", "/.srt/bin/busybox")
	}
	c.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	c.file("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	c.file("etc/hosts", 0o644, []byte("127.0.0.1 localhost\n::1 localhost\n"))
	c.file("etc/nsswitch.conf", 0o644, []byte("hosts: files\n"))
	if s.CACerts != "" {
		c.hostFile("etc/ssl/certs/ca-certificates.crt", 0o644, s.CACerts)
	}
	return c.close()
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
