// Package gpuhost is the host side that the GPU backends (cuda, opencl,
// metal) share: a problem resident on the device as input copies and an
// output, behind one small interface of buffer operations (Alloc, Write,
// Read, Fill, Free) that each API implements; the arguments of a run in a
// kernel body's order; compile jobs keyed by family, dtype and candidate;
// and the arithmetic of a copy-bandwidth measurement. What differs between
// the APIs (compiling, launching, timing) stays in the backends.
//
// It imports no driver: each backend implements Memory and Device for its
// API.
package gpuhost
