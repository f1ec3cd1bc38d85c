package port

// transitions is the table of legal state changes (seed 000,
// "SandboxState"). A state maps to the states it may move to; anything
// else is a *TransitionError.
//
//	created   → warm (ready), error (launch failed), destroyed
//	warm      → active (an exec starts), suspended, destroyed, error
//	active    → warm (the last exec ended), suspended, destroyed, error
//	suspended → warm or active (resume: active when execs are running),
//	            destroyed, error
//	error     → destroyed
//	destroyed → nothing: the handle is no longer valid
//
// active → active (a second concurrent exec) is not a transition.
var transitions = map[State][]State{
	StateCreated:   {StateWarm, StateError, StateDestroyed},
	StateWarm:      {StateActive, StateSuspended, StateDestroyed, StateError},
	StateActive:    {StateWarm, StateSuspended, StateDestroyed, StateError},
	StateSuspended: {StateWarm, StateActive, StateDestroyed, StateError},
	StateError:     {StateDestroyed},
	StateDestroyed: nil,
}

// CanTransition reports whether a session may move from one state to
// another.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// checkTransition returns a *TransitionError unless from → to is legal.
func checkTransition(from, to State) error {
	if CanTransition(from, to) {
		return nil
	}
	return &TransitionError{From: from, To: to}
}
