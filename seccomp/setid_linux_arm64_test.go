package seccomp

// legacyModeCases: arm64 has only the *at forms.
func legacyModeCases() []modeCase { return nil }
