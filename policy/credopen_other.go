//go:build !unix

package policy

import (
	"fmt"
	"os"
)

// openNoFollow refuses: this platform cannot open a file without
// following a final link, so a masked file cannot be read safely.
func openNoFollow(path string) (*os.File, error) {
	return nil, fmt.Errorf("%s: masking a credential file is not supported on this platform: %w", path, ErrUnenforceable)
}
