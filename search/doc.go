// Package search holds tuning search spaces (named integer parameters with
// allowed values and constraints) and the strategies that decide which
// candidates to measure and how often.
//
// # Contract
//
// It knows nothing of devices, kernels or files: a candidate is a map of
// integers and a measurement a Target's Measure, so kerntune tune and
// kerntune replay run the same Driver (see ExampleDriver). A failed
// candidate is the Target's business; the driver records it and
// goes on. Strategies draw their randomness from Options.Seed alone. The
// package imports internal/stats only.
package search
