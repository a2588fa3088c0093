// Package replay runs search strategies against recorded Kernel Tuner
// caches instead of a device. The search is kerntune tune's
// (search.Driver); only its Target differs: measuring a
// configuration draws timing samples (with replacement, seeded) from its
// recorded samples, a configuration recorded as failed fails, and the
// simulated measurement time is the sum of the samples drawn plus the
// recorded compile time of every configuration measured for the first time.
//
// It imports search, search/ktcache and internal/stats: no tuner, no
// device.
package replay
