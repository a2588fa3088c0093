package main

import (
	"strconv"
	"syscall"
)

// limitFileSize sets RLIMIT_FSIZE: writes past it fail with EFBIG, as on a
// full disk (Go ignores the SIGXFSZ that comes with it).
func limitFileSize(s string) error {
	if s == "" {
		return nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return err
	}
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
}
