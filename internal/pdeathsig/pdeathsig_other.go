//go:build !linux

package pdeathsig

func startPinned(start func() (int, error)) error {
	_, err := start()
	return err
}
