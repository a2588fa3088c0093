// Package compilepool is the compile cache and compile pool shared by the
// GPU backends. The tuner announces the candidates it will build
// (Prefetch); a pool of goroutines compiles them while the device times
// others, and Build waits for a candidate's compile, or runs it on its own
// goroutine when the pool has not reached it yet. Every compile runs once
// per key, whichever goroutine gets to it first.
//
// The newest announcement is compiled first, in its own order: a search
// announces each batch it is about to measure together with its guess at
// the next one, and a guess that proved wrong must not hold up the batch
// announced after it. Older announcements are compiled when the newer ones
// are done.
//
// It imports only the standard library and knows nothing of APIs: a
// compile is a function, a candidate a key.
package compilepool
