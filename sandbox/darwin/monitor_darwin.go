package darwin

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
)

// logPath is macOS's unified-log tool.
const logPath = "/usr/bin/log"

// Monitor runs `log stream` for the session of tag and calls onViolation
// for each of its denials (ParseLogLine) until ctx is done. It returns
// once the stream has started; stop waits for it to end after ctx is
// cancelled. onViolation is called from one goroutine and must not block.
func Monitor(ctx context.Context, tag string, onViolation func(Violation)) (stop func(), err error) {
	cmd := exec.CommandContext(ctx, logPath, "stream", "--predicate", LogPredicate(tag), "--style", "compact")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("log stream: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s stream: %w", logPath, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := ParseLogLine(sc.Text(), tag); ok {
				onViolation(v)
			}
		}
		cmd.Wait()
	}()
	return func() { <-done }, nil
}
