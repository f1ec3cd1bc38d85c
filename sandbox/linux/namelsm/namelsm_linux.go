package namelsm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Program is one sandbox's loaded and attached BPF program, with its own
// maps: several srt runs each load their own and see only their own
// sandbox (scopes). Nothing is pinned: Close, or srt's exit, which closes
// the descriptors, unloads everything.
type Program struct {
	objs   namelsmObjects
	links  []link.Link
	rd     *ringbuf.Reader
	rules  []string
	mounts []Mount
	once   sync.Once
	// serving is set by Serve; done is closed when its goroutine ends.
	serving bool
	done    chan struct{}
}

// Event is one refusal of the program.
type Event struct {
	// PID is the caller's process ID in srt's PID namespace.
	PID int
	// Rule is the rule's text (the supervisor's, for the same rule).
	Rule string
	// Path is the refused name as a host path, as far as the record
	// holds it ("…/" in front when the chain was longer).
	Path string
	// Data is set for a write open or truncate of an existing file.
	Data bool
}

// ReadMounts returns srt's own mount table (/proc/self/mountinfo).
func ReadMounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		mj, mn, ok := strings.Cut(fs[2], ":")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(mj, 10, 32)
		b, err2 := strconv.ParseUint(mn, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, Mount{Dev: unix.Mkdev(uint32(a), uint32(b)), Root: unoctal(fs[3]), Point: unoctal(fs[4])})
	}
	return out, sc.Err()
}

// unoctal undoes mountinfo's \ooo escapes.
func unoctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ErrRefused is wrapped by Load's error when the kernel refuses BPF LSM
// programs as such (not this policy's maps): it will for the whole boot.
var ErrRefused = errors.New("refused by the kernel")

// Load loads the program with c's rules and attaches it to every hook. It
// fails (and leaves nothing behind) where the kernel has no BPF LSM, the
// caller may not load it, or the verifier refuses it: the caller then
// uses the supervisor.
func Load(c *Compiled, mounts []Mount) (*Program, error) {
	spec, err := loadNamelsm()
	if err != nil {
		return nil, fmt.Errorf("namelsm: %w", err)
	}
	p := &Program{rules: c.Rules, mounts: mounts, done: make(chan struct{})}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("namelsm: the verifier refused the program: %w", err)
		}
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("namelsm: the kernel refuses to load a BPF LSM program (EPERM: bpf not in its lsm= list, missing capabilities, or a kernel that lets no program attach to its functions): %w", ErrRefused)
		}
		return nil, fmt.Errorf("namelsm: loading: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	for k, v := range c.Keys {
		key := namelsmKey{H: k.H, Kind: k.Kind, Dev: k.Dev}
		val := namelsmValue{Rule: v.Rule, Anchors: v.Anchors}
		if err := p.objs.Rules.Put(&key, &val); err != nil {
			return nil, fmt.Errorf("namelsm: rules map: %w", err)
		}
	}
	cf := namelsmConfig{SuffixMask: c.Config.SuffixMask, WinMask: c.Config.WinMask, SymsufMask: c.Config.SymSufMask,
		Full: c.Config.Full, ExtMask: c.Config.ExtMask, HooksRule: c.Config.HooksRule, Git: c.Config.Git, Anchors: c.Config.Anchors,
		Unders: c.Config.Unders}
	if err := p.objs.Cfg.Put(uint32(0), &cf); err != nil {
		return nil, fmt.Errorf("namelsm: config map: %w", err)
	}
	for _, prog := range []*ebpf.Program{p.objs.InodeCreate, p.objs.InodeMkdir, p.objs.InodeMknod, p.objs.InodeSymlink,
		p.objs.InodeLink, p.objs.InodeRename, p.objs.FileOpen, p.objs.PathTruncate} {
		l, err := link.AttachLSM(link.LSMOptions{Program: prog})
		if err != nil {
			return nil, fmt.Errorf("namelsm: attaching %s: %w", prog, err)
		}
		p.links = append(p.links, l)
	}
	if p.rd, err = ringbuf.NewReader(p.objs.Events); err != nil {
		return nil, fmt.Errorf("namelsm: ring buffer: %w", err)
	}
	ok = true
	return p, nil
}

// Register puts the mount namespace of descriptor ns (an open
// /proc/PID/ns/mnt) in the program's scope, and exempts the file
// systems of descriptors private (the sandbox's own TMPDIR, /dev,
// /proc), except one that also holds a host directory the sandbox can
// write in (writable: their device numbers, userspace encoding).
func (p *Program) Register(ns int, private []int, writable []uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(ns, &st); err != nil {
		return fmt.Errorf("namelsm: the sandbox's mount namespace: %w", err)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(ns, &fs); err != nil || fs.Type != unix.NSFS_MAGIC {
		return errors.New("namelsm: not a namespace descriptor")
	}
	inum := uint32(st.Ino)
	for _, fd := range private {
		var s unix.Stat_t
		if unix.Fstat(fd, &s) != nil {
			continue
		}
		shared := false
		for _, w := range writable {
			shared = shared || w == uint64(s.Dev)
		}
		if shared {
			continue // rules apply there too: stricter, never weaker
		}
		dev, one := KernelDev(uint64(s.Dev)), uint32(1)
		if err := p.objs.Exempt.Put(&dev, &one); err != nil {
			return fmt.Errorf("namelsm: exempt map: %w", err)
		}
	}
	one := uint32(1)
	if err := p.objs.Scopes.Put(&inum, &one); err != nil {
		return fmt.Errorf("namelsm: scopes map: %w", err)
	}
	return nil
}

// Serve hands every refusal to on, from a goroutine of its own, until
// Close.
func (p *Program) Serve(on func(Event)) {
	p.serving = true
	go func() {
		defer close(p.done)
		for {
			rec, err := p.rd.Read()
			if err != nil {
				return // drained (Close's deadline) or closed
			}
			var e namelsmEvent
			if binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &e) != nil {
				continue
			}
			on(p.event(&e))
		}
	}()
}

// event turns a record into an Event.
func (p *Program) event(e *namelsmEvent) Event {
	var comps []string
	for i := int(e.Depth) - 1; i >= 0 && i < len(e.Comp); i-- {
		comps = append(comps, cstr(e.Comp[i][:]))
	}
	rule := "in-kernel name rule"
	if int(e.Rule) < len(p.rules) && p.rules[e.Rule] != "" {
		rule = p.rules[e.Rule]
	}
	rel := "/" + strings.Join(comps, "/")
	host := rel
	if e.More != 0 {
		host = "…" + rel
	} else {
		// The chain starts at the file system's root: shown where a
		// mount of that file system shows it.
		for _, m := range p.mounts {
			if KernelDev(m.Dev) == e.Dev && within(rel, m.Root) {
				host = path.Join(m.Point, strings.TrimPrefix(rel, strings.TrimSuffix(m.Root, "/")))
				if m.Point == "/" {
					break
				}
			}
		}
	}
	return Event{PID: int(e.Pid), Rule: rule, Path: host, Data: e.Op == opOpen || e.Op == opTruncate}
}

const (
	opOpen     = 7
	opTruncate = 9
)

func cstr(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// Close detaches and unloads the program, once every refusal recorded so
// far has gone to Serve's function.
func (p *Program) Close() error {
	p.once.Do(func() {
		for _, l := range p.links {
			l.Close()
		}
		if p.rd != nil {
			if p.serving {
				// Read returns what is there, then the deadline.
				p.rd.SetDeadline(time.Now())
				<-p.done
			}
			p.rd.Close()
		}
		p.objs.Close()
	})
	return nil
}

// Probe loads and attaches the program with no rules and unloads it
// again: nil when this kernel and this process can run it.
func Probe() error {
	c, err := Compile(nil, nil, nil)
	if err != nil {
		return err
	}
	p, err := Load(c, nil)
	if err != nil {
		return err
	}
	return p.Close()
}

// Refusal is what a kernel that refused the program said, kept for the
// rest of the boot (Refused, NoteRefused): trying again costs every run
// the parsing of the kernel's BTF and the failed load (about 100 ms).
type Refusal struct {
	// Key is the boot and the program object: another boot or another
	// srt build tries again.
	Key    string
	Reason string
}

// refusalKey is this boot's ID and the object's digest.
func refusalKey() string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	sum := sha256.Sum256(_NamelsmBytes)
	return strings.TrimSpace(string(boot)) + " " + hex.EncodeToString(sum[:8])
}

// Refused returns why the kernel refused the program earlier in this
// boot, per file f (a file in srt's private state directory), or "".
func Refused(f string) string {
	b, err := os.ReadFile(f)
	if err != nil {
		return ""
	}
	key, reason, ok := strings.Cut(string(b), "\n")
	if !ok || key != refusalKey() {
		return ""
	}
	return reason
}

// NoteRefused records in f that the kernel refused the program (err).
func NoteRefused(f string, err error) {
	tmp := f + ".tmp"
	if os.WriteFile(tmp, []byte(refusalKey()+"\n"+err.Error()), 0o600) == nil {
		os.Rename(tmp, f)
	}
}
