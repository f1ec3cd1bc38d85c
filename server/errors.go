package server

import "errors"

// Until the port declares its own error values, these mark the port
// errors that map to 409 and 503 (see classify).
var (
	errTransition  = errors.New("illegal state transition")
	errUnavailable = errors.New("backend unavailable on this host")
)
