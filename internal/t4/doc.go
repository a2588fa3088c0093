// Package t4 reads and writes the T4 ("open autotuning results") format
// that Kernel Tuner writes and reads: schema_version "1.0.0",
// metadata.timeunit, and one result per configuration with configuration,
// times, invalidity, correctness, measurements and objectives. kerntune
// export writes it (FromParams, FromTrace); the replay of recorded caches
// reads it (Parse, through package ktcache).
//
// It imports params and internal/trace only.
package t4
