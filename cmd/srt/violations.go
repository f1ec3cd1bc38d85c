package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/srt-go/srt/violation"
)

// summaryLines is how many violations the exit summary lists.
const summaryLines = 5

// violationLog reports the sandbox's refusals while the command runs
// (--violations, --debug) and sums them up at exit. Everything goes to
// the file and stderr, never stdout, and nothing changes the exit status.
type violationLog struct {
	store  *violation.Store
	file   *os.File // --violations; nil for none
	stderr io.Writer
	debug  bool
	cancel func()
	done   chan struct{}
	mu     sync.Mutex
	err    error // first write error on file; guarded by mu
}

// startViolationLog subscribes to store before the command starts.
func startViolationLog(store *violation.Store, file *os.File, stderr io.Writer, debug bool) *violationLog {
	l := &violationLog{store: store, file: file, stderr: stderr, debug: debug, done: make(chan struct{})}
	// A large buffer: the file must not miss a line, and writing one is
	// far quicker than any command can be refused something.
	ch, cancel := store.Subscribe(1 << 16)
	l.cancel = cancel
	go func() {
		defer close(l.done)
		enc := (*json.Encoder)(nil)
		if file != nil {
			enc = json.NewEncoder(file)
		}
		for v := range ch {
			if enc != nil {
				if err := enc.Encode(v); err != nil {
					l.mu.Lock()
					if l.err == nil {
						l.err = err
					}
					l.mu.Unlock()
				}
			}
			if debug {
				fmt.Fprintf(stderr, "srt: blocked: %s\n", terminalSafe(v.Raw))
			}
		}
	}()
	return l
}

// finish stops the subscription once the command has ended (every
// violation has been recorded by then), closes the file, and prints the
// summary unless quiet.
func (l *violationLog) finish(quiet bool) {
	l.cancel()
	<-l.done
	if l.file != nil {
		if err := l.file.Close(); err != nil && l.err == nil {
			l.err = err
		}
		if l.err != nil {
			fmt.Fprintf(l.stderr, "srt: writing %s: %v\n", l.file.Name(), l.err)
		}
	}
	if d := l.store.Dropped(); d > 0 {
		fmt.Fprintf(l.stderr, "srt: %d violations could not be reported\n", d)
	}
	// A refused socket(AF_UNIX) alone is left out of the summary: glibc
	// tries nscd's socket whenever a program looks up a user (ls -l, id,
	// curl as root), so it would follow almost every command. It is still
	// recorded (--violations, --debug, the library's store).
	var vs []violation.Violation
	for _, v := range l.store.Violations(0) {
		if v.Action != violation.SocketUnix {
			vs = append(vs, v)
		}
	}
	total := l.store.TotalCount() - (len(l.store.Violations(0)) - len(vs))
	if quiet || total <= 0 {
		return
	}
	if total == 1 {
		fmt.Fprintf(l.stderr, "srt: 1 action was blocked by the sandbox:\n")
	} else {
		fmt.Fprintf(l.stderr, "srt: %d actions were blocked by the sandbox:\n", total)
	}
	for i, v := range vs {
		if i == summaryLines {
			break
		}
		fmt.Fprintf(l.stderr, "  %s\n", terminalSafe(v.Raw))
	}
	if more := total - min(len(vs), summaryLines); more > 0 {
		where := ""
		if l.file != nil {
			where = " (see " + l.file.Name() + ")"
		}
		fmt.Fprintf(l.stderr, "  … and %d more%s\n", more, where)
	}
}

// terminalSafe escapes what a terminal would act on (control and format
// characters, escape sequences, invalid UTF-8) in a line that names things
// from the sandbox: a file name can hold "\x1b]…" and rewrite the user's
// screen, or a bidirectional override and reorder it.
func terminalSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsGraphic(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
