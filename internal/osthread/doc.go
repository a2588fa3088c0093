// Package osthread runs closures on one goroutine locked to its OS thread
// for the goroutine's whole life. GPU APIs bind state to the calling
// thread (a CUDA context made current; Metal's autorelease pools and
// command encoders), so a backend makes every call of a device on one
// thread and marshals the calls of all other goroutines to it, one at a
// time.
//
// The goroutine never unlocks its thread: when it exits, the runtime
// discards the thread with whatever API state it holds.
package osthread
