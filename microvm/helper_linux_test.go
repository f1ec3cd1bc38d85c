package microvm_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/srt-go/srt/microvm"
)

// helperMain is the subprocess of TestParentKilledLeavesNoQEMU: it boots
// a VM, prints the QEMU pid and waits to be killed.
func helperMain() {
	vm, err := microvm.Launch(context.Background(), microvm.Config{
		InitPath: os.Getenv("SRT_MICROVM_TEST_INIT"), BootTimeout: 90 * time.Second})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("PID", vm.PID())
	time.Sleep(5 * time.Minute)
}
