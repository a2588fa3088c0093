//go:build race

package cpu

// kernRaceEnabled shrinks the test shapes under the race detector, which
// slows the kernels by an order of magnitude.
const kernRaceEnabled = true
