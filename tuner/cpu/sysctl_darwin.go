package cpu

import "golang.org/x/sys/unix"

// sysctlModel reads the CPU brand on macOS, where there is no /proc/cpuinfo.
func sysctlModel() string {
	s, err := unix.Sysctl("machdep.cpu.brand_string")
	if err != nil {
		return ""
	}
	return s
}
