package wire

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNamespaceExchange: PID 1 sends its mount namespace and the private
// trees that exist, and runs on only once srt answers; without the
// answer (srt closed its end) it fails.
func TestNamespaceExchange(t *testing.T) {
	for _, ack := range []bool{true, false} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		srt := os.NewFile(uintptr(fds[0]), "srt")
		res := make(chan error, 1)
		go func() { res <- SendNamespace(fds[1], []string{"/proc", "/nonexistent", t.TempDir()}) }()
		got, err := RecvNamespace(srt)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d descriptors, want the namespace and two trees", len(got))
		}
		var ns, self unix.Stat_t
		unix.Fstat(got[0], &ns)
		unix.Stat("/proc/self/ns/mnt", &self)
		if ns.Ino != self.Ino {
			t.Errorf("namespace inode %d, want %d", ns.Ino, self.Ino)
		}
		for _, fd := range got {
			unix.Close(fd)
		}
		if ack {
			unix.Write(int(srt.Fd()), []byte{AckKernelNames})
		}
		srt.Close()
		if err := <-res; (err == nil) != ack {
			t.Errorf("ack %v: SendNamespace: %v", ack, err)
		}
		unix.Close(fds[1])
	}
}
