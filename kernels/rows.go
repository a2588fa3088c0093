package kernels

// The row-wise families (softmax, rmsnorm) share their workload and odd shapes.

var rowWorkload = shapes(
	[]int{4096, 128},                    // short: attention over a short context
	[]int{32768, 1024}, []int{512, 896}, // medium
	[]int{4096, 4096}, // long
	[]int{16, 151936}, // xlong: vocabulary
)

// 3×904: rows of a multiple of 8 that no thread count divides, for vector
// loads; 3×56: a row of a multiple of 8 that small segments hold in
// registers whole (KEEP); 3×8: the one row every KEEP=1 candidate holds
// (TPR·VEC·UNROLL ≥ 8, every VEC divides it), which 56 columns exceed for
// the smallest (TPR 8, VEC 2 or 4, UNROLL 1 or 2).
var rowOdd = shapes([]int{3, 37}, []int{5, 300}, []int{2, 2049}, []int{1, 1}, []int{3, 904}, []int{3, 56}, []int{3, 8})

func rowFlops(c Case) float64 { return 4 * float64(c.Shape[0]) * float64(c.Shape[1]) }
