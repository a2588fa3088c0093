package worker

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the worker when its parent dies (a
// SIGKILLed tuner must not leave a hung worker on the device).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
