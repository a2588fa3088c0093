//go:build ktfault

package main

import (
	"fmt"
	"os"

	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/worker"
)

// Built with -tags ktfault (scripts/gpu-fault.sh), the worker makes the
// candidates listed in KTDEV_FAULT fault on purpose, to show on a real
// device that a crashing candidate is isolated.
func init() {
	workerWrap = func(b device.Backend) (device.Backend, error) {
		faults, err := worker.ParseFaults(os.Getenv("KTDEV_FAULT"))
		if err != nil {
			return nil, fmt.Errorf("KTDEV_FAULT: %w", err)
		}
		return worker.WithFaults(b, faults), nil
	}
}
