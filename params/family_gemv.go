package params

import "fmt"

// GemvNT is the name of the matrix-vector family of LLM decode.
const GemvNT = "gemv_nt"

func gemvNTFamily() *Family {
	return &Family{
		Name: GemvNT, Doc: "y = x·Wᵀ (+ bias); x 1×k, W n×k row-major, y 1×n (LLM decode)",
		Dims: []string{"m", "n", "k"},
		Classes: []Class{
			{"tiny", "n < 2048 and k < 2048"},
			{"largeK_smallN", "k ≥ 2048 and n < 2048"},
			{"largeN", "n > 4096"},
			{"mid", "otherwise (2048 ≤ n ≤ 4096)"},
		},
		Classify: gemvClassify,
		Spaces: map[string]*Space{"gpu": gpuGemvSpace(), "cpu": {Params: []Param{
			{Name: "BN", Values: []int{4, 8, 16, 32, 64, 128, 256}, Default: 32, Doc: "rows of W per work chunk"},
			{Name: "ROWS", Values: []int{1, 2, 4}, Default: 1, Doc: "rows of W sharing each load of x"},
			{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "independent accumulators along k"},
			threadsParam,
		}}},
	}
}

func gemvClassify(shape []int) (string, error) {
	if err := checkDims(GemvNT, []string{"m", "n", "k"}, shape, [][2]int{{1, 2}}); err != nil {
		return "", err
	}
	if shape[0] != 1 {
		return "", fmt.Errorf("gemv_nt: m must be 1 (y = x·Wᵀ with x of 1×k), got m=%d; use gemm_av for m > 1", shape[0])
	}
	n, k := shape[1], shape[2]
	switch {
	case n < 2048 && k < 2048:
		return "tiny", nil
	case n < 2048:
		return "largeK_smallN", nil
	case n > 4096:
		return "largeN", nil
	}
	return "mid", nil
}

func gpuGemvSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "TG", Values: []int{64, 128, 256, 512}, Default: 256, Doc: "threads per threadgroup"},
			{Name: "TPR", Values: []int{4, 8, 16, 32, 64, 128, 256}, Default: 32, Doc: "threads per output row (a K-split)"},
			{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "independent accumulators per thread"},
			{Name: "VEC", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "elements per vector load"},
		},
		Check: func(shape []int, p map[string]int) error {
			if p["TPR"] > p["TG"] {
				return fmt.Errorf("TPR=%d exceeds TG=%d", p["TPR"], p["TG"])
			}
			if shape != nil && len(shape) == 3 && p["VEC"] > 0 && shape[2]%p["VEC"] != 0 {
				return fmt.Errorf("VEC=%d must divide k=%d (rows are read with aligned vector loads)", p["VEC"], shape[2])
			}
			return nil
		},
	}
}
