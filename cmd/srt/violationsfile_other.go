//go:build !unix

package main

import (
	"fmt"
	"os"
)

// openViolationsFile opens the --violations file for appending.
func openViolationsFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--violations %s: %w", path, err)
	}
	return f, nil
}
