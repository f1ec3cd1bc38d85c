//go:build !linux

package port

import (
	"context"
	"fmt"
	"runtime"

	"github.com/srt-go/srt/microvm"
)

// NewMicroVMLauncher returns the microvm backend's launcher; on this
// platform it reports that no VM can start (the QEMU backend is Linux
// only).
func NewMicroVMLauncher(base microvm.Config) MicroVMLauncher {
	return disabledVM(fmt.Sprintf("the microvm backend runs on linux, not %s", runtime.GOOS))
}

// MicroVMDisabled returns a MicroVMLauncher that reports no VM can start,
// with note as the reason (an operator's explicit opt-out).
func MicroVMDisabled(note string) MicroVMLauncher { return disabledVM(note) }

type disabledVM string

func (d disabledVM) Probe(context.Context) (bool, string) { return false, string(d) }
func (d disabledVM) Launch(context.Context, Spec, EgressLists) (Sandbox, error) {
	return nil, fmt.Errorf("%w: microvm: %s", ErrBackendUnavailable, string(d))
}

// defaultMicroVM is New's MicroVMLauncher when Options.MicroVM is nil.
func defaultMicroVM() MicroVMLauncher { return nil }
