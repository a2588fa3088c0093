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
// registers whole (KEEP).
var rowOdd = shapes([]int{3, 37}, []int{5, 300}, []int{2, 2049}, []int{1, 1}, []int{3, 904}, []int{3, 56})

func rowFlops(c Case) float64 { return 4 * float64(c.Shape[0]) * float64(c.Shape[1]) }
