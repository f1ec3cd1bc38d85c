//go:build linux

package microvm

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestInitramfsNewc parses the archive back by the newc rules: every
// header at a 4-byte boundary, names NUL-terminated, data padded.
func TestInitramfsNewc(t *testing.T) {
	dir := t.TempDir()
	init := filepath.Join(dir, "init")
	os.WriteFile(init, []byte("#!init"), 0o755)
	mod := filepath.Join(dir, "9p.ko")
	os.WriteFile(mod, []byte("module"), 0o644)
	var b bytes.Buffer
	if err := writeInitramfs(&b, initramfsSpec{Init: init, Modules: []string{mod}}); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	data := b.Bytes()
	for off := 0; ; {
		if off%4 != 0 || string(data[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int {
			v, _ := strconv.ParseUint(string(data[off+6+8*i:off+14+8*i]), 16, 32)
			return int(v)
		}
		size, namesize := field(6), field(11)
		name := string(data[off+110 : off+110+namesize-1])
		off += (110 + namesize + 3) &^ 3
		files[name] = string(data[off : off+size])
		off += (size + 3) &^ 3
		if name == "TRAILER!!!" {
			if off != len(data) {
				t.Errorf("%d bytes after the trailer", len(data)-off)
			}
			break
		}
	}
	for name, want := range map[string]string{
		"init": "#!init", "lib/srt/00-9p.ko": "module", "lib/srt/modules.list": "/lib/srt/00-9p.ko\n",
		".srt/bin/srt-guest": "/init", "dev": "", "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
	} {
		if got, ok := files[name]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %q", name, got, ok, want)
		}
	}
}

func TestExtractVmlinuxRejects(t *testing.T) {
	for name, in := range map[string][]byte{
		"empty":       nil,
		"no-header":   make([]byte, 4096),
		"payload-oob": append(append(make([]byte, 0x202), "HdrS"...), make([]byte, 0x100)...),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "payload-oob" {
				in[0x24c] = 0xff // payload_length far beyond the file
			}
			if _, err := extractVmlinux(t.Context(), in); err == nil {
				t.Error("accepted")
			}
		})
	}
}
