// Package kernels is the catalog of kernel families kerntune tunes: their
// shapes and shape classes (from the params package, which applications
// share), default workloads, operand layouts, flop and byte counts for
// rooflines, and float64 reference implementations used to verify every
// candidate.
//
// # Adding a family
//
// Every layer keeps a family in a file of its own and finds it by name, so
// a new family NAME adds files, two lines and its twin in the Python loader:
//
//	params/family_NAME.go               name, dims, classes, parameter spaces; one line in params' builtins list
//	kernels/NAME.go                     workload, odd shapes, operands, reference, flops, and when it has
//	                                    them its Options, Scalars and Fill (builtin, from init)
//	kernels/gpu/NAME.go                 the GPU body; one entry in the bodies map of bodies.go
//	tuner/cpu/kern_NAME.go              the CPU kernel functions
//	tuner/cpu/family_NAME.go            the CPU builder and a gonum baseline if there is one (families.Add)
//	tuner/cuda/baseline_NAME.go         a cuBLAS baseline, if there is one (blasCalls.Add)
//	tuner/metal/mps_NAME_darwin.go      an MPS baseline, if there is one (mpsEncoders.Add)
//	python/kerntune_params/__init__.py  the family as params/family_NAME.go has it, in builtin_families
//	                                    (params' TestPythonBuiltinFamilies holds the two equal)
//
// Its tests: a naive implementation with the mutations in the tuner's
// mutation test (an entry in mutants), and rows in the table-driven tests
// of its classes and reference. The tests that range over every family
// (verification on the CPU, source generation for every GPU API, the MSL
// check, OpenCL execution) then cover it. README's family table documents it.
//
// # Contract
//
// The float64 references are the truth every candidate, CPU or GPU, is
// verified against. The package imports params, internal/bf16 and
// internal/half only: no search, no backend, nothing that needs a device.
package kernels
