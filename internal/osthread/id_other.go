//go:build !linux

package osthread

// ID is 0: without cgo the thread id is not available here (Metal's
// backend passes pthread_self, through its Objective-C runtime binding, as
// Config.Self instead).
func ID() uintptr { return 0 }
