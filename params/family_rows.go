package params

import "fmt"

// Row-wise families (softmax, rmsnorm) share their shapes, classes and spaces.

// rowFamily is a row-wise family over rows × cols.
func rowFamily(name, doc string) *Family {
	return &Family{
		Name: name, Doc: doc,
		Dims: []string{"rows", "cols"}, Classes: rowClasses, Classify: rowClassifier(name),
		Spaces: map[string]*Space{"cpu": cpuRowSpace(), "gpu": gpuRowSpace()},
	}
}

func rowClassifier(family string) func([]int) (string, error) {
	return func(shape []int) (string, error) {
		if err := checkDims(family, []string{"rows", "cols"}, shape, [][2]int{{0, 1}}); err != nil {
			return "", err
		}
		switch c := shape[1]; {
		case c <= 256:
			return "short", nil
		case c <= 2048:
			return "medium", nil
		case c <= 16384:
			return "long", nil
		}
		return "xlong", nil
	}
}

var rowClasses = []Class{
	{"short", "cols ≤ 256"},
	{"medium", "256 < cols ≤ 2048 (e.g. hidden size 896)"},
	{"long", "2048 < cols ≤ 16384 (e.g. 4096)"},
	{"xlong", "cols > 16384 (e.g. a vocabulary of 151936)"},
}

func cpuRowSpace() *Space {
	return &Space{Params: []Param{
		{Name: "ROWS", Values: []int{1, 2, 4, 8, 16, 64}, Default: 4, Doc: "rows per work chunk"},
		{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "independent accumulators along a row"},
		threadsParam,
	}}
}

func gpuRowSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "TPR", Values: []int{8, 16, 32, 64, 128, 256, 512, 1024}, Default: 256, Doc: "threads per row"},
			{Name: "RPB", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "rows per threadgroup"},
			{Name: "UNROLL", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "vector loads in flight per thread"},
			{Name: "VEC", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "elements per vector load and store"},
		},
		Check: func(shape []int, p map[string]int) error {
			if t := p["TPR"] * p["RPB"]; t < 32 || t > 1024 {
				return fmt.Errorf("TPR·RPB = %d threads; must be 32..1024", t)
			}
			if len(shape) == 2 && p["VEC"] > 0 && shape[1]%p["VEC"] != 0 {
				return fmt.Errorf("VEC=%d must divide cols=%d (rows are read with aligned vector loads)", p["VEC"], shape[1])
			}
			return nil
		},
	}
}
