package params

import "fmt"

// Names of the GEMM families: keys in the file and in env variables.
const (
	GemmAV  = "gemm_av"
	GemmAtB = "gemm_at_b"
)

func gemmAVFamily() *Family {
	return gemmFamily(GemmAV, "C = A·V; A m×k, V k×n, C m×n, row-major", 0, 1) // C is m×n
}

func gemmAtBFamily() *Family {
	return gemmFamily(GemmAtB, "Z = Aᵀ·B; A m×n, B m×k, Z n×k, row-major", 1, 2) // Z is n×k
}

// gemmFamily is a GEMM over dims m, n, k whose output has the dims
// outRows × outCols: the two GEMMs differ only in their layout.
func gemmFamily(name, doc string, outRows, outCols int) *Family {
	classify, classes := gemmClassifier(name, outRows, outCols)
	return &Family{
		Name: name, Doc: doc,
		Dims: []string{"m", "n", "k"}, Classes: classes, Classify: classify,
		Spaces: map[string]*Space{"cpu": cpuGemmSpace(), "gpu": gpuGemmSpace()},
	}
}

// gemm classes: by volume, with skinny shapes (few rows or columns of output) apart.
func gemmClassifier(family string, outRows, outCols int) (func([]int) (string, error), []Class) {
	classes := []Class{
		{"small", "m·n·k ≤ 2^21 (e.g. 128³)"},
		{"skinny", "not small, and the output has ≤ 32 rows or ≤ 32 columns"},
		{"medium", "not skinny, m·n·k ≤ 2^28 (e.g. 512³)"},
		{"large", "otherwise (e.g. 1024³, 512×4864×896)"},
	}
	names := []string{"m", "n", "k"}
	ops := [][2]int{{0, 1}, {0, 2}, {1, 2}}
	return func(shape []int) (string, error) {
		if err := checkDims(family, names, shape, ops); err != nil {
			return "", err
		}
		vol := float64(shape[0]) * float64(shape[1]) * float64(shape[2])
		switch {
		case vol <= 1<<21:
			return "small", nil
		case shape[outRows] <= 32 || shape[outCols] <= 32:
			return "skinny", nil
		case vol <= 1<<28:
			return "medium", nil
		}
		return "large", nil
	}, classes
}

func cpuGemmSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "MC", Values: []int{16, 32, 64, 128, 256}, Default: 64, Doc: "rows of A packed per block"},
			{Name: "NC", Values: []int{64, 128, 256, 512, 1024, 2048}, Default: 256, Doc: "columns of the right operand packed per block"},
			{Name: "KC", Values: []int{32, 64, 128, 256, 512}, Default: 128, Doc: "depth of a packed block"},
			{Name: "MR", Values: []int{1, 2, 4}, Default: 2, Doc: "rows of the register micro-tile"},
			{Name: "NR", Values: []int{4, 8}, Default: 4, Doc: "columns of the register micro-tile"},
			threadsParam,
		},
		Check: func(_ []int, p map[string]int) error {
			// Guard the divisors: Check may see a partial or hand-made map.
			if p["MR"] <= 0 || p["NR"] <= 0 {
				return fmt.Errorf("MR=%d and NR=%d must be positive", p["MR"], p["NR"])
			}
			if p["MC"]%p["MR"] != 0 {
				return fmt.Errorf("MC=%d must be a multiple of MR=%d", p["MC"], p["MR"])
			}
			if p["NC"]%p["NR"] != 0 {
				return fmt.Errorf("NC=%d must be a multiple of NR=%d", p["NC"], p["NR"])
			}
			return nil
		},
	}
}

// GPU spaces are shared by every GPU backend (CUDA, Metal, OpenCL): one
// kernel body per family is compiled for each, with these as #defines.

func gpuGemmSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "BM", Values: []int{16, 32, 64, 128}, Default: 16, Doc: "output rows per threadgroup tile"},
			{Name: "BN", Values: []int{16, 32, 64, 128}, Default: 16, Doc: "output columns per threadgroup tile"},
			{Name: "BK", Values: []int{8, 16, 32}, Default: 16, Doc: "depth of a tile staged in threadgroup memory"},
			{Name: "TM", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "output rows per thread"},
			{Name: "TN", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "output columns per thread"},
			{Name: "PAD", Values: []int{0, 1, 4}, Default: 0, Doc: "padding of threadgroup tiles against bank conflicts"},
			{Name: "MMA", Values: []int{0, 1}, Default: 0, Doc: "1: SIMD-group 8×8 matrix multiply (Metal simdgroup_matrix); TM×TN are then 8×8 fragments per SIMD-group of 32 threads"},
		},
		Check: func(_ []int, p map[string]int) error {
			if p["TM"] <= 0 || p["TN"] <= 0 {
				return fmt.Errorf("TM=%d and TN=%d must be positive", p["TM"], p["TN"])
			}
			if p["MMA"] == 1 {
				fm, fn := 8*p["TM"], 8*p["TN"]
				if p["BM"]%fm != 0 || p["BN"]%fn != 0 || p["BK"]%8 != 0 {
					return fmt.Errorf("MMA=1: BM=%d, BN=%d must be multiples of 8·TM=%d, 8·TN=%d and BK=%d of 8", p["BM"], p["BN"], fm, fn, p["BK"])
				}
				if t := 32 * (p["BM"] / fm) * (p["BN"] / fn); t > 1024 {
					return fmt.Errorf("MMA=1: 32·(BM/8TM)·(BN/8TN) = %d threads; must be at most 1024", t)
				}
				return nil
			}
			if p["MMA"] != 0 {
				return fmt.Errorf("MMA=%d; must be 0 or 1", p["MMA"])
			}
			if p["BM"]%p["TM"] != 0 || p["BN"]%p["TN"] != 0 {
				return fmt.Errorf("BM=%d and BN=%d must be multiples of TM=%d and TN=%d", p["BM"], p["BN"], p["TM"], p["TN"])
			}
			if t := (p["BM"] / p["TM"]) * (p["BN"] / p["TN"]); t < 32 || t > 1024 {
				return fmt.Errorf("(BM/TM)·(BN/TN) = %d threads; must be 32..1024", t)
			}
			return nil
		},
	}
}
