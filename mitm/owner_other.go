//go:build !unix

package mitm

import "os"

// ownerTrusted is false where a file's owner cannot be read (fail
// closed): srt runs sandboxes on Linux and macOS only.
func ownerTrusted(os.FileInfo) bool { return false }
