// Package kernels is the catalog of kernel families kerntune tunes: their
// shapes and shape classes (from the params package, which applications
// share), default workloads, operand layouts, flop and byte counts for
// rooflines, and float64 reference implementations used to verify every
// candidate.
//
// # Adding a family
//
// Every layer finds a family by name, so a new family NAME is files that
// edit none, three at most (scripts/trial_family.sh adds one so and runs it):
//
//	params/families/NAME.json   its description: dims, shape rules, classes, and per kind of
//	                            backend its parameters and constraints (expressions), with the
//	                            kinds of mutant its tests must catch; read by the tuner, params
//	                            and the Python loader alike
//	kernels/gpu/NAME.go         its GPU body (builtinBody) and its catalog entry (AddBuiltin:
//	                            workload, odd shapes, operands, reference, flops), from init
//	tuner/cpu/NAME.go           its CPU kernel (families.Add), if it runs on the CPU
//
// A family without a GPU space has no body, and keeps its catalog entry in
// kernels/NAME.go (builtin); the built-in families keep theirs there too.
// Vendor baselines, where there are some, add tuner/cuda/baseline_NAME.go
// (blasCalls.Add) and tuner/metal/mps_NAME_darwin.go (mpsEncoders.Add).
//
// Its tests: a naive implementation in the tuner's mutation test (an entry
// in mutants), checked with the mutations its description chooses; the
// tests that range over every family (the constraints of the descriptions
// in both loaders, verification on the CPU, source generation for every
// GPU API, the MSL check, OpenCL execution) then cover it. README's family
// table documents it.
//
// # Contract
//
// The float64 references are the truth every candidate, CPU or GPU, is
// verified against. The package imports params, internal/bf16 and
// internal/half only: no search, no backend, nothing that needs a device.
package kernels
