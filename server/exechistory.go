package server

import (
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/port"
)

// The exec history (issue 21, for the web console): each sandbox's last
// api.ExecHistoryLimit execs as api.ExecRecords, argv and output capped
// (api.ExecHistoryArgvBytes and api.ExecHistoryArgvElems,
// api.ExecHistoryOutputBytes), env and stdin
// never kept. It is keyed by the sandbox's id and stream tag, so a
// sandbox launched again under the same id starts with none; a
// sandbox's history goes with the sandbox (dropped on DELETE, and for
// any sandbox the port no longer lists when an exec starts).

// execHistories is every sandbox's exec history. The zero value is
// ready.
type execHistories struct {
	mu  sync.Mutex
	all map[string][]*execRecord // key: historyKey; oldest first
}

// execRecord is one exec being recorded; its mutex guards rec.
type execRecord struct {
	mu  sync.Mutex
	rec api.ExecRecord
	out int64 // output bytes kept
}

// historyKey names one sandbox's history: its id and stream tag.
func historyKey(sb port.Sandbox) string {
	k := sb.Handle().SessionID
	if sub, ok := sb.(port.EventSubscriber); ok {
		k += "\x00" + sub.StreamTag()
	}
	return k
}

// start records a new exec of sb, dropping its oldest past the limit and
// the histories of sandboxes live no longer.
func (h *execHistories) start(sb port.Sandbox, live []port.Sandbox, req api.ExecRequest) *execRecord {
	r := &execRecord{rec: api.ExecRecord{Cwd: req.Cwd, StartedAt: time.Now(), State: api.ExecRunning, Output: []api.ExecOutput{}}}
	// Each element costs its length plus one (as a C argv's NUL), so
	// that empty strings are not free, and the elements are counted too.
	n := 0
	for _, a := range req.Argv {
		if n+len(a)+1 > api.ExecHistoryArgvBytes || len(r.rec.Argv) == api.ExecHistoryArgvElems {
			r.rec.ArgvTruncated = true
			break
		}
		n += len(a) + 1
		r.rec.Argv = append(r.rec.Argv, a)
	}
	if r.rec.Argv == nil {
		r.rec.Argv = []string{}
	}
	keys := map[string]bool{}
	for _, l := range live {
		keys[historyKey(l)] = true
	}
	k := historyKey(sb)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.all == nil {
		h.all = map[string][]*execRecord{}
	}
	for x := range h.all {
		if !keys[x] && x != k {
			delete(h.all, x)
		}
	}
	recs := append(h.all[k], r)
	if len(recs) > api.ExecHistoryLimit {
		recs = slices.Delete(recs, 0, len(recs)-api.ExecHistoryLimit)
	}
	h.all[k] = recs
	return r
}

// drop forgets sb's history.
func (h *execHistories) drop(sb port.Sandbox) {
	k := historyKey(sb)
	h.mu.Lock()
	delete(h.all, k)
	h.mu.Unlock()
}

// list returns deep copies of sb's records, oldest first.
func (h *execHistories) list(sb port.Sandbox) []api.ExecRecord {
	h.mu.Lock()
	recs := slices.Clone(h.all[historyKey(sb)])
	h.mu.Unlock()
	out := make([]api.ExecRecord, 0, len(recs))
	for _, r := range recs {
		r.mu.Lock()
		c := r.rec
		c.Output = make([]api.ExecOutput, len(r.rec.Output))
		for i, o := range r.rec.Output {
			c.Output[i] = api.ExecOutput{Stream: o.Stream, Data: slices.Clone(o.Data)}
		}
		if c.ExitCode != nil {
			ec := *c.ExitCode
			c.ExitCode = &ec
		}
		r.mu.Unlock()
		out = append(out, c)
	}
	return out
}

// add records one event of the exec's stream.
func (r *execRecord) add(ev port.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case port.EventStarting:
		if ev.ExecID != "" {
			r.rec.ExecID = ev.ExecID
		}
	case port.EventStdout, port.EventStderr:
		data := ev.Data
		if room := int64(api.ExecHistoryOutputBytes) - r.out; int64(len(data)) > room {
			r.rec.OutputTruncated += int64(len(data)) - room
			data = data[:room]
		}
		if len(data) == 0 {
			return
		}
		r.out += int64(len(data))
		if n := len(r.rec.Output); n > 0 && r.rec.Output[n-1].Stream == ev.Type {
			r.rec.Output[n-1].Data = append(r.rec.Output[n-1].Data, data...)
			return
		}
		r.rec.Output = append(r.rec.Output, api.ExecOutput{Stream: ev.Type, Data: slices.Clone(data)})
	case port.EventViolation:
		r.rec.Violations += max(ev.Count, 1)
	case port.EventLost:
		r.rec.Violations += ev.Lost
	case port.EventExit, port.EventKilled:
		r.rec.State = api.ExecExited
		if ev.Type == port.EventKilled {
			r.rec.State, r.rec.Reason = api.ExecKilled, ev.Reason
		}
		if ev.ExitCode != nil {
			c := *ev.ExitCode
			r.rec.ExitCode = &c
		}
		t := ev.Time
		if t.IsZero() {
			t = time.Now()
		}
		r.rec.EndedAt = &t
	}
}

// listExecs is GET /v1/sandboxes/{sessionId}/execs: the sandbox's exec
// history, oldest first.
func (s *Server) listExecs(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r); sb != nil {
		writeJSON(w, http.StatusOK, s.history.list(sb))
	}
}
