// Package kernels is the catalog of kernel families kerntune tunes: their
// shapes and shape classes (from the params package, which applications
// share), default workloads, operand layouts, flop and byte counts for
// rooflines, and float64 reference implementations used to verify every
// candidate.
//
// # Adding a family
//
// A new family NAME is one folder and one import line: family/NAME holds
// its description (NAME.json: dims, shape rules, classes, and per kind of
// backend its parameters and constraints, with the kinds of mutant its
// tests must catch; read by the tuner, params and the Python loader alike)
// and registers from init its catalog entry (AddBuiltin: workload, odd
// shapes, operands, reference, flops), its GPU body (gpu.AddBuiltin), its
// CPU kernel (tuner/cpu.AddFamily) and its mutant (AddMutant);
// family/all imports it. family/twice is the example, and
// scripts/trial_family.sh derives a family from it and runs it. The tests
// that range over every family (the constraints of the descriptions in
// both loaders, verification on the CPU and on PoCL, source generation for
// every GPU API, the MSL check, the mutations) then cover it.
//
// The families written before folders keep their parts in the layers'
// packages: the description in params/families, the catalog entry in
// kernels/NAME.go, the body in kernels/gpu/NAME.go, the CPU kernel in
// tuner/cpu, vendor baselines in tuner/cuda/baseline_NAME.go
// (blasCalls.Add) and tuner/metal/mps_NAME_darwin.go (mpsEncoders.Add), the
// mutant in the tuner's mutation test.
//
// # Contract
//
// The float64 references are the truth every candidate, CPU or GPU, is
// verified against. The package imports params, internal/bf16 and
// internal/half only: no search, no backend, nothing that needs a device.
package kernels
