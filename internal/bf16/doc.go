// Package bf16 converts between float32 and bfloat16, the 16-bit format
// whose 8-bit exponent is float32's and whose significand keeps 8 bits
// (7 stored): a bfloat16 is the upper half of a float32's bits.
//
// It imports only the standard library. FromFloat32 rounds to nearest, ties
// to even, as CUDA and MLX do, so that the CPU side stores the values a GPU
// kernel would.
package bf16
