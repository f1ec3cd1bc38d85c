package server

import (
	"os"
	"testing"

	"github.com/srt-go/srt/sandbox"
)

// TestMain: the test binary starts native terminals, so it plays the
// roles of srt's binary too (sandbox.Main) before the tests run.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
