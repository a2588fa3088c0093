//go:build !linux

package cudadrv

// osThreadID returns 0: the thread id is not available without cgo here, so
// re-entrant calls from the context thread are not detected.
func osThreadID() int { return 0 }
