package proxy

import (
	"sync"
	"time"
)

// limitReportEvery is how often, at most, a Server logs and reports the
// connections it refuses for Config.MaxConns: a client that keeps
// knocking gets one line a second, not one per attempt.
const limitReportEvery = time.Second

// connLimit rate-limits the reports of connections refused for
// Config.MaxConns. The zero value is ready.
type connLimit struct {
	mu       sync.Mutex // guards the fields below
	reported time.Time  // when the last report was made
	folded   int        // refusals since then, not yet reported
}

// refused records one refusal at now. It returns report true when this
// one is to be reported (the first, and then the first after each
// limitReportEvery), with n the refusals it stands for: itself and those
// folded since the last report.
func (l *connLimit) refused(now time.Time) (report bool, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.folded++
	if !l.reported.IsZero() && now.Sub(l.reported) < limitReportEvery {
		return false, 0
	}
	n, l.folded, l.reported = l.folded, 0, now
	return true, n
}
