// Package stats summarises timing samples: median, interquartile range,
// minimum, coefficient of variation.
//
// Search, tuner, backends and replay all summarise through it, so a median
// means the same everywhere: the textbook median, not gonum's lower middle
// value. It imports only gonum's stat.
package stats
