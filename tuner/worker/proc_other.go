//go:build !linux

package worker

import "os/exec"

// setProcAttr does nothing here: without Pdeathsig the worker exits when
// its input closes, which happens when the parent dies.
func setProcAttr(*exec.Cmd) {}
