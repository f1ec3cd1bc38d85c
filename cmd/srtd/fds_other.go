//go:build !unix

package main

// raiseNoFile reports an unknown limit (0) where there is no
// RLIMIT_NOFILE: the per-session connection cap is taken as given.
func raiseNoFile() (soft, hard uint64, err error) { return 0, 0, nil }
