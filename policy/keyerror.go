package policy

// KeyError is a compile error about the value of one settings key, such
// as a CA file that does not load: Key is its dotted path as
// settings.Error.Path spells it ("network.tlsTerminate.caKeyPath",
// "network.mitmProxy.domains[2]"). Compile turns it into a
// *settings.Error placed at the key's value in the settings file
// (settings.Settings.ErrorAt), so that the message reads like the
// parser's: "FILE:LINE:COLUMN: KEY: ERR".
type KeyError struct {
	Key string
	Err error
}

// Error is "KEY: ERR".
func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *KeyError) Unwrap() error { return e.Err }

// EnvError is a compile error about a variable of srt's own environment
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY and their lower-case forms, which
// network.parentProxy falls back to), not about the settings file:
// Compile does not put the file's name on it.
type EnvError struct {
	// Var is the variable's name, as spelled in the environment.
	Var string
	Err error
}

// Error is "VAR (srt's environment): ERR".
func (e *EnvError) Error() string { return e.Var + " (srt's environment): " + e.Err.Error() }

// Unwrap returns Err.
func (e *EnvError) Unwrap() error { return e.Err }
