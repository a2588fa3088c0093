//go:build linux

package osthread

import "syscall"

// ID is the calling OS thread's id (gettid).
func ID() uintptr { return uintptr(syscall.Gettid()) }
