// Package half converts between float32 and IEEE 754 binary16 ("half"),
// the f16 storage format of kerntune's kernels.
//
// It imports only the standard library. FromFloat32 rounds to nearest,
// ties to even; ToFloat32 is one table load, cheap enough for the CPU
// kernels' inner loops.
package half
