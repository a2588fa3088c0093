package params

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// sysctlCPUModel reads the CPU brand on macOS, where there is no /proc/cpuinfo.
func sysctlCPUModel() string {
	s, err := syscall.Sysctl("machdep.cpu.brand_string")
	if err != nil {
		return ""
	}
	return s
}

// readLocalGPU reads the Apple GPU's model and core count from the I/O
// Registry through ioreg (always installed on macOS). On Apple silicon the
// chip's name is also the CPU brand, which stands in when the entry has no
// model. Any failure is an error, never a panic: the caller then warns.
func readLocalGPU() (DeviceID, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/sbin/ioreg", "-r", "-d", "1", "-c", "AGXAccelerator").Output()
	if err != nil {
		return DeviceID{}, fmt.Errorf("reading the GPU core count with ioreg: %w", err)
	}
	model, cores, err := parseIoreg(string(out))
	if err != nil {
		return DeviceID{}, fmt.Errorf("reading the GPU core count with ioreg: %w", err)
	}
	if model == "" {
		model = sysctlCPUModel()
	}
	return DeviceID{Backend: "metal", Name: model, ComputeUnits: cores}, nil
}
