//go:build unix

package sysmem

import (
	"math"
	"syscall"
)

// addressLimit is RLIMIT_AS's soft limit, when one is set.
func addressLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil {
		return 0, false
	}
	if r.Cur == math.MaxUint64 || int64(r.Cur) < 0 {
		return 0, false
	}
	return uint64(r.Cur), true
}
