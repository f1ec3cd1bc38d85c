package linux

import (
	"os"

	"github.com/srt-go/srt/policy"
)

// lstatKind reports what is at path without following a final symlink.
func lstatKind(path string) (policy.Kind, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return policy.Missing, err
	}
	if fi.IsDir() {
		return policy.Dir, nil
	}
	return policy.File, nil
}
