// Package spec reads kernel spec files: JSON documents (schema in
// schema.json) with which users bring their own GPU kernels to kerntune. A
// spec gives the kernel's source (a body in the kernels/gpu dialect, raw
// .cu/.metal/.cl files taking the parameters as macros, or an MLX
// fast.metal_kernel body whose signature is generated as MLX does), its buffers and
// scalar arguments, the tunable parameters and their values, constraints and
// launch geometry as expressions over the shape and the parameters (the
// language of families.Expr, which the family descriptions use too), the shapes or shape classes to tune, and how
// to check results: the float64 reference of a built-in family it
// implements, a reference expression per output element, or a NumPy
// function in a Python file next to the spec (reference.python, run in
// python3 with numpy, once per problem; pyref.go), on inputs drawn as each
// buffer's dist says (uniform, normal, int, sorted, positive; dist.go).
//
// A parsed spec becomes a *kernels.Kernel and a *gpu.Body; Register adds
// both to their registries, so that the tuner and every GPU backend find the
// kernel by name exactly like a built-in family, and the results land in
// hardware_params.json under the spec's name.
//
// It imports kernels, kernels/gpu, params and search, never the tuner or a
// backend.
package spec
