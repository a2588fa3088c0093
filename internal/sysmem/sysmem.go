package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Available returns the bytes this process can still allocate and what
// bounds them ("MemAvailable", "ulimit -v"); ok is false where neither is
// known, and then no check is made.
func Available() (bytes uint64, source string, ok bool) {
	if b, ok := memAvailable("/proc/meminfo"); ok {
		bytes, source = b, "MemAvailable in /proc/meminfo"
	}
	if lim, ok := addressLimit(); ok {
		// The runtime has reserved address space already; what it holds
		// now counts against the limit.
		used := vmSize("/proc/self/status")
		if used < lim && (source == "" || lim-used < bytes) {
			bytes, source = lim-used, "the address-space limit (ulimit -v)"
		}
	}
	return bytes, source, source != ""
}

// memAvailable reads MemAvailable from a meminfo file, in bytes.
func memAvailable(path string) (uint64, bool) {
	return kibField(path, "MemAvailable:")
}

// vmSize reads the process's VmSize from a status file, in bytes (0 if
// unknown).
func vmSize(path string) uint64 {
	n, _ := kibField(path, "VmSize:")
	return n
}

// kibField reads a "Name:  N kB" line of a /proc file.
func kibField(path, name string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), name)
		if !found {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return n << 10, true
	}
	return 0, false
}
