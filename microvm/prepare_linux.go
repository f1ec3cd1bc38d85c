package microvm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/srt-go/srt/internal/vmcache"
	"golang.org/x/sys/unix"
)

// The guest kernel (issue 7, "Guest"): Debian's generic kernel,
// linux-image-amd64, fetched with apt-get download and unpacked with
// dpkg-deb, so a fresh machine needs nothing but its own registry. Its
// bzImage is turned into the uncompressed ELF vmlinux, which QEMU boots
// through the PVH entry point: booting the bzImage would make the guest
// decompress itself, +3.6 s under TCG (microvm-recipe.md §2, §9.9). The
// virtio and 9p drivers are modules in that kernel, so their .ko files go
// into the initramfs and /init loads them.
//
// A kernel with those drivers built in (the recipe's mini kernel, 0.9 s
// to ready instead of 2 s) can be named with SRT_MICROVM_KERNEL or
// Assets.Kernel; it then needs no modules.

// guestModules are the module names /init loads, dependencies first
// (each .ko's "depends=" is also honoured). virtio_mmio is the transport
// of QEMU's microvm machine; 9pnet_virtio and 9p give the shares;
// virtio_console the control port.
var guestModules = []string{"virtio_mmio", "virtio_console", "9pnet_virtio", "9p"}

// Assets are the files a VM boots from. They live in the cache directory
// and are shared by every VM.
type Assets struct {
	// Kernel is an uncompressed x86-64 ELF vmlinux with a PVH note.
	Kernel string
	// Modules are .ko files /init loads in this order; empty for a kernel
	// with the drivers built in.
	Modules []string
	// KernelRelease names the kernel ("6.1.0-57-amd64", "custom").
	KernelRelease string
	// CacheDir is where Prepare put them.
	CacheDir string
}

// DefaultCacheDir is /var/cache/srt-microvm for root and
// $XDG_CACHE_HOME/srt-microvm (~/.cache/srt-microvm) otherwise;
// SRT_MICROVM_CACHE overrides both (internal/vmcache.Dir, which the
// policy's host-trusted table protects from native runs too).
func DefaultCacheDir() string { return vmcache.Dir() }

var (
	prepareMu sync.Mutex
	prepared  = map[string]*Assets{} // by cache dir; guarded by prepareMu
)

// Prepare obtains the guest kernel and caches it in cacheDir ("" means
// DefaultCacheDir): on a fresh machine it runs apt-cache, apt-get
// download and dpkg-deb (about 3 s and a 70 MB download); later, the
// first call of a process runs apt-cache to learn the current kernel
// package and finds it cached, and later calls return at once. It needs no root when cacheDir is writable. Cancelling ctx
// stops the download.
//
// Which kernel: SRT_MICROVM_KERNEL naming a vmlinux with the drivers
// built in; else the mini kernel kernel/build-mini.sh left in
// cacheDir/mini-current; else (or with SRT_MICROVM_KERNEL=debian)
// Debian's stock kernel.
func Prepare(ctx context.Context, cacheDir string) (*Assets, error) {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	if err := checkCacheDir(cacheDir); err != nil {
		return nil, err
	}
	switch k := os.Getenv("SRT_MICROVM_KERNEL"); k {
	case "debian":
	case "":
		// The mini kernel, when kernel/build-mini.sh has built one.
		if k, err := filepath.EvalSymlinks(filepath.Join(cacheDir, "mini-current", "vmlinux")); err == nil && checkVmlinux(k) == nil {
			return &Assets{Kernel: k, KernelRelease: "mini", CacheDir: cacheDir}, nil
		}
	default:
		if err := checkVmlinux(k); err != nil {
			return nil, fmt.Errorf("SRT_MICROVM_KERNEL: %w", err)
		}
		return &Assets{Kernel: k, KernelRelease: "custom", CacheDir: cacheDir}, nil
	}
	prepareMu.Lock()
	defer prepareMu.Unlock()
	if a, ok := prepared[cacheDir]; ok && exists(a.Kernel) {
		c := *a
		return &c, nil
	}
	pkg, err := debianKernelPackage(ctx)
	if err != nil {
		return nil, err
	}
	release := strings.TrimPrefix(pkg, "linux-image-")
	dir := filepath.Join(cacheDir, "debian-"+release)
	a := &Assets{Kernel: filepath.Join(dir, "vmlinux"), KernelRelease: release, CacheDir: cacheDir}
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		a.Modules = guestModulesOrdered(dir)
		prepared[cacheDir] = a
		c := *a
		return &c, nil
	}
	if err := fetchDebianKernel(ctx, pkg, dir); err != nil {
		return nil, err
	}
	a.Modules = guestModulesOrdered(dir)
	prepared[cacheDir] = a
	c := *a
	return &c, nil
}

// debianKernelPackage resolves linux-image-amd64 to the versioned
// package (the ABI changes with security updates; recipe pitfall 14).
func debianKernelPackage(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", "linux-image-amd64").Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends linux-image-amd64: %w (is this Debian with apt? set SRT_MICROVM_KERNEL to a vmlinux instead)", err)
	}
	m := regexp.MustCompile(`Depends:\s*(linux-image-[0-9][^\s]*-amd64)`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("apt-cache depends linux-image-amd64: no versioned kernel in %q", out)
	}
	return string(m[1]), nil
}

func fetchDebianKernel(ctx context.Context, pkg, dir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dl := exec.CommandContext(ctx, "apt-get", "download", pkg)
	dl.Dir = tmp
	if out, err := dl.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get download %s: %w: %s", pkg, err, lastLine(out))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download %s: found %d .deb files", pkg, len(debs))
	}
	x := filepath.Join(tmp, "x")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], x).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -x %s: %w: %s", debs[0], err, lastLine(out))
	}
	release := strings.TrimPrefix(pkg, "linux-image-")
	stage := filepath.Join(tmp, "stage")
	if err := os.MkdirAll(filepath.Join(stage, "modules"), 0o755); err != nil {
		return err
	}
	bz, err := os.ReadFile(filepath.Join(x, "boot", "vmlinuz-"+release))
	if err != nil {
		return err
	}
	vmlinux, err := extractVmlinux(ctx, bz)
	if err != nil {
		return fmt.Errorf("extract vmlinux from vmlinuz-%s: %w", release, err)
	}
	if err := os.WriteFile(filepath.Join(stage, "vmlinux"), vmlinux, 0o644); err != nil {
		return err
	}
	if err := checkVmlinux(filepath.Join(stage, "vmlinux")); err != nil {
		return err
	}
	mods, err := resolveModules(filepath.Join(x, "lib", "modules", release), guestModules)
	if err != nil {
		return err
	}
	var order []string
	for i, m := range mods {
		b, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		if strings.HasSuffix(m, ".xz") {
			if b, err = runFilter(ctx, b, "xz", "-dc"); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("%02d-%s.ko", i, moduleName(m))
		if err := os.WriteFile(filepath.Join(stage, "modules", name), b, 0o644); err != nil {
			return err
		}
		order = append(order, name)
	}
	if err := os.WriteFile(filepath.Join(stage, "modules", "order"), []byte(strings.Join(order, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, "complete"), []byte(pkg+"\n"), 0o644); err != nil {
		return err
	}
	os.RemoveAll(dir)
	return os.Rename(stage, dir)
}

func guestModulesOrdered(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "modules", "order"))
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range strings.Fields(string(b)) {
		out = append(out, filepath.Join(dir, "modules", n))
	}
	return out
}

func moduleName(path string) string {
	n := filepath.Base(path)
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".xz"), ".ko")
	return strings.ReplaceAll(n, "-", "_")
}

// resolveModules finds want and their dependencies (the "depends=" field
// of each module's .modinfo) under root and returns them dependencies
// first. The .deb ships no modules.dep: depmod makes it at install time.
func resolveModules(root string, want []string) ([]string, error) {
	byName := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".ko") || strings.HasSuffix(p, ".ko.xz")) {
			byName[moduleName(p)] = p
		}
		return nil
	})
	var out []string
	seen := map[string]bool{}
	var visit func(n string) error
	visit = func(n string) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		p, ok := byName[n]
		if !ok {
			return fmt.Errorf("kernel module %s not found under %s", n, root)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if i := bytes.Index(b, []byte("\x00depends=")); i >= 0 && !strings.HasSuffix(p, ".xz") {
			rest := b[i+len("\x00depends="):]
			if j := bytes.IndexByte(rest, 0); j >= 0 {
				for _, d := range strings.Split(string(rest[:j]), ",") {
					if d != "" {
						if err := visit(strings.ReplaceAll(d, "-", "_")); err != nil {
							return err
						}
					}
				}
			}
		}
		out = append(out, p)
		return nil
	}
	for _, n := range want {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// extractVmlinux returns the ELF kernel inside a bzImage, as the kernel's
// scripts/extract-vmlinux does, but reading the boot protocol header
// (Documentation/arch/x86/boot.rst): the protected-mode code starts after
// (setup_sects+1) sectors, and payload_offset/payload_length (at 0x248,
// 0x24c) locate the compressed vmlinux in it.
func extractVmlinux(ctx context.Context, bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage (no HdrS header)")
	}
	setup := int(bz[0x1f1])
	if setup == 0 {
		setup = 4
	}
	start := (setup + 1) * 512
	off := int(binary.LittleEndian.Uint32(bz[0x248:]))
	n := int(binary.LittleEndian.Uint32(bz[0x24c:]))
	if start+off+n > len(bz) || n == 0 {
		return nil, errors.New("bzImage payload out of range")
	}
	p := bz[start+off : start+off+n]
	var out []byte
	var err error
	switch {
	case bytes.HasPrefix(p, []byte("\xfd7zXZ\x00")):
		// --single-stream: the kernel appends the uncompressed size.
		out, err = runFilter(ctx, p, "xz", "-dc", "--single-stream")
	case bytes.HasPrefix(p, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		out, err = runFilter(ctx, p, "zstd", "-dcq")
	case bytes.HasPrefix(p, []byte{0x1f, 0x8b}):
		out, err = runFilter(ctx, p, "gzip", "-dc")
	case bytes.HasPrefix(p, []byte("\x7fELF")):
		out = p
	default:
		return nil, fmt.Errorf("unknown bzImage compression (magic % x)", p[:4])
	}
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(out, []byte("\x7fELF")) {
		return nil, errors.New("decompressed payload is not an ELF file")
	}
	return out, nil
}

func runFilter(ctx context.Context, in []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil && out.Len() == 0 {
		return nil, fmt.Errorf("%s: %w: %s", name, err, lastLine(errb.Bytes()))
	}
	return out.Bytes(), nil
}

// checkVmlinux checks that path is an x86-64 ELF kernel with the PVH
// entry note (XEN_ELFNOTE_PHYS32_ENTRY, type 18), which QEMU needs to
// boot an uncompressed kernel (recipe pitfall 8).
func checkVmlinux(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s: not an x86-64 kernel", path)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(b) >= 12 {
			nsz, dsz, typ := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
			name := b[12:min(len(b), 12+int(nsz))]
			if typ == 18 && bytes.HasPrefix(name, []byte("Xen")) {
				return nil
			}
			adv := 12 + align4(int(nsz)) + align4(int(dsz))
			if adv > len(b) {
				break
			}
			b = b[adv:]
		}
	}
	return fmt.Errorf("%s: no PVH entry note; QEMU cannot boot it uncompressed", path)
}

func align4(n int) int { return (n + 3) &^ 3 }

// isStatic reports whether path is an ELF executable without an
// interpreter, so it can run as /init with no libc in the guest.
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func fileHash(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

// initramfsFor returns the cached initramfs for init and a, building it
// when the inputs changed. The name is a hash of every input, so VMs
// started by different binaries never share a stale one.
func initramfsFor(ctx context.Context, a *Assets, init string) (string, error) {
	if !isStatic(init) {
		return "", fmt.Errorf("guest init %s is not a static executable (build it with CGO_ENABLED=0)", init)
	}
	if ok, err := hasGuestAgent(init); err != nil {
		return "", err
	} else if !ok {
		return "", fmt.Errorf("guest init %s does not contain the guest agent (package microvm/guest); set Config.InitPath or SRT_MICROVM_INIT", init)
	}
	spec := initramfsSpec{Init: init, Modules: a.Modules}
	if bb, err := exec.LookPath("busybox"); err == nil && isStatic(bb) {
		spec.Busybox = bb
		if out, err := exec.CommandContext(ctx, bb, "--list").Output(); err == nil {
			spec.Applets = strings.Fields(string(out))
		}
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		spec.CACerts = "/etc/ssl/certs/ca-certificates.crt"
	}
	h := sha256.New()
	fmt.Fprintf(h, "v1\n%q\n", spec.Applets)
	for _, p := range append([]string{init, spec.Busybox, spec.CACerts}, spec.Modules...) {
		if p != "" {
			if err := fileHash(h, p); err != nil {
				return "", err
			}
		}
	}
	path := filepath.Join(a.CacheDir, "initrd-"+hex.EncodeToString(h.Sum(nil))[:20]+".cpio")
	if _, err := os.Stat(path); err == nil {
		now := time.Now()
		os.Chtimes(path, now, now) // in use: see pruneInitramfs
		return path, nil
	}
	pruneInitramfs(a.CacheDir)
	f, err := os.CreateTemp(a.CacheDir, ".initrd-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if err := writeInitramfs(f, spec); err != nil {
		f.Close()
		return "", fmt.Errorf("write initramfs: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	os.Chmod(f.Name(), 0o644)
	return path, os.Rename(f.Name(), path)
}

// hasGuestAgent reports whether the executable links microvm/guest, by
// looking for its marker string. The marker is assembled at run time so
// that this package's own binary does not contain it by accident.
func hasGuestAgent(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	m := []byte("1/tnega-tseug-mvorcim-trs")
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
	return bytes.Contains(b, m), nil
}

// pruneInitramfs removes initramfs files unused for a week (each use
// touches its file), so rebuilt binaries do not fill the cache. A week,
// not less: a VM suspended to disk boots its initramfs again on Resume.
func pruneInitramfs(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "initrd-*.cpio"))
	for _, p := range old {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.Remove(p)
		}
	}
}

// ErrUntrustedCache is returned by Prepare for a cache directory that
// another user could change: what the cache holds is what every VM boots
// (the kernel, and the initramfs whose /init enforces the guest's rules).
var ErrUntrustedCache = errors.New("untrusted microvm cache directory")

// checkCacheDir refuses (ErrUntrustedCache) a cache directory that is not
// a directory of its own (a symbolic link), or that a user other than
// this process's and root could change: owned by someone else, or
// writable by group or others; and likewise any directory on its way,
// but for a sticky one (/tmp), whose entries only their owner may
// replace. It checks the path as given and with its links resolved. The
// case it stops: another local user creating /tmp/srt-microvm (the
// fallback of DefaultCacheDir without a home) with a kernel of theirs.
func checkCacheDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	uid := uint32(os.Geteuid())
	for _, leaf := range []string{abs, real} {
		for p := leaf; ; p = filepath.Dir(p) {
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return fmt.Errorf("cache directory %s: %w", p, err)
			}
			switch {
			case p == leaf && st.Mode&unix.S_IFMT != unix.S_IFDIR:
				return fmt.Errorf("%w: %s is not a directory", ErrUntrustedCache, p)
			case st.Uid != uid && st.Uid != 0:
				return fmt.Errorf("%w: %s is owned by uid %d", ErrUntrustedCache, p, st.Uid)
			case st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o022 != 0 && (p == leaf || st.Mode&unix.S_ISVTX == 0):
				return fmt.Errorf("%w: %s is writable by group or others (mode %o)", ErrUntrustedCache, p, st.Mode&0o7777)
			}
			if p == "/" {
				break
			}
		}
	}
	return nil
}
