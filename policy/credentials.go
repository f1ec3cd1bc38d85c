package policy

import "io/fs"

// MaskedFile is one masked credential file (Policy.MaskedFiles).
type MaskedFile struct {
	// Path is the file's resolved path (through the link guard).
	Path string
	// Data is what the sandbox reads there: the file with its secrets
	// replaced by sentinels.
	Data []byte
	// Perm is the mode the copy shows, the file's own without write bits.
	Perm fs.FileMode
	// Rule names the entry ("credentials.files[0]").
	Rule string
}
