package wire

// GuardianFD is the guardian's socket (SOCK_STREAM) to srt, in the
// guardian process.
const GuardianFD = 3

// GuardianRequest is one request to the guardian: one JSON object per
// line (see the package comment).
type GuardianRequest struct {
	Op   string `json:"op"` // one of the Guardian* ops
	Path string `json:"path,omitempty"`
	Dir  bool   `json:"dir,omitempty"`
	// Content is what a new file placeholder holds.
	Content string `json:"content,omitempty"`
	PIDs    []int  `json:"pids,omitempty"`
}

// GuardianReply answers one GuardianRequest, in order: one JSON object
// per line.
type GuardianReply struct {
	// Created says a create request made the placeholder (it was
	// missing), rather than sharing one already there.
	Created bool `json:"created,omitempty"`
	// Error is why the request failed; empty on success.
	Error string `json:"error,omitempty"`
}

// The guardian's ops.
const (
	// GuardianCreate holds Path (a directory when Dir is set, else a
	// file holding Content) for this sandbox, creating it when missing.
	GuardianCreate = "create"
	// GuardianAdopt holds Path when it is another sandbox's placeholder,
	// creating nothing.
	GuardianAdopt = "adopt"
	// GuardianWatch adds PIDs (bubblewrap first, which leads its own
	// process group) to the processes waited for before cleanup.
	GuardianWatch = "watch"
	// GuardianDone says srt saw bubblewrap end normally.
	GuardianDone = "done"
)
