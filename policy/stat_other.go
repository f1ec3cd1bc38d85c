//go:build !unix

package policy

import "io/fs"

// owner is unknown on this platform: no link is judged by its owner.
func owner(fs.FileInfo) (uint32, bool) { return 0, false }

// fileID is unknown on this platform: directories are not deduplicated.
func fileID(fs.FileInfo) ([2]uint64, bool) { return [2]uint64{}, false }

// euid is meaningless on this platform.
func euid() uint32 { return 0 }

// links is unknown on this platform.
func links(fs.FileInfo) uint64 { return 0 }
