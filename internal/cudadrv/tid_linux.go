//go:build linux

package cudadrv

import "syscall"

// osThreadID returns the calling OS thread's id (gettid), used to detect
// calls made from the context goroutine, which is locked to its thread.
func osThreadID() int { return syscall.Gettid() }
