package params

import "syscall"

// sysctlCPUModel reads the CPU brand on macOS, where there is no /proc/cpuinfo.
func sysctlCPUModel() string {
	s, err := syscall.Sysctl("machdep.cpu.brand_string")
	if err != nil {
		return ""
	}
	return s
}
