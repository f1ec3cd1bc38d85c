package seccomp

// fsCalls are the observed filesystem calls on arm64, which has only the
// *at forms.
func fsCalls() map[uint32]namedFSCall { return atCalls() }
