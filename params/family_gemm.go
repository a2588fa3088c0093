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

// gpuGemmSpace: one space for both GEMM bodies. MMA=0 is the SIMT body
// (BM×BN tile, TM×TN outputs per thread, STAGES 1 or 2 threadgroup
// buffers); MMA=1 the matrix-unit body written against fragments, laid out
// as MLX's steel GEMM: WM×WN SIMD-groups (warps) of 32 threads, each owning
// a (BM/WM)×(BN/WN) block of the tile, and a ring of STAGES threadgroup
// buffers. The fragment shape is the backend's (8×8×8 on Metal, 16×16 of
// mma.sync m16n8k16 or m16n8k8 on CUDA), so backends add the divisibility
// it needs. Values only the matrix-unit body takes (BM, BN 48, BN 256, BK
// 24, BK 64, STAGES 3 and 4, TF32) are rejected for MMA=0, and the SIMT
// parameters (TM, TN, PAD) are fixed for MMA=1, so that no two candidates
// are the same kernel.
func gpuGemmSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "BM", Values: []int{16, 32, 48, 64, 128}, Default: 16, Doc: "output rows per threadgroup tile (48: MMA=1 only)"},
			{Name: "BN", Values: []int{16, 32, 48, 64, 128, 256}, Default: 16, Doc: "output columns per threadgroup tile (48, 256: MMA=1 only)"},
			{Name: "BK", Values: []int{8, 16, 24, 32, 64}, Default: 16, Doc: "depth of a tile staged in threadgroup memory (24, 64: MMA=1 only)"},
			{Name: "TM", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "output rows per thread (MMA=0; 1 with MMA=1)"},
			{Name: "TN", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "output columns per thread (MMA=0; 1 with MMA=1)"},
			{Name: "PAD", Values: []int{0, 1, 4}, Default: 0, Doc: "padding of threadgroup tiles against bank conflicts (MMA=0; 0 with MMA=1, whose tiles are padded by 16 bytes a row)"},
			{Name: "MMA", Values: []int{0, 1}, Default: 0, Doc: "1: matrix units through fragments (Metal simdgroup_matrix 8×8, CUDA mma.sync); 0: SIMT"},
			{Name: "WM", Values: []int{1, 2, 4}, Default: 1, Doc: "SIMD-groups (warps) along the tile's rows (MMA=1; 1 with MMA=0)"},
			{Name: "WN", Values: []int{1, 2, 4}, Default: 1, Doc: "SIMD-groups (warps) along the tile's columns (MMA=1; 1 with MMA=0)"},
			{Name: "STAGES", Values: []int{1, 2, 3, 4}, Default: 1, Doc: "threadgroup buffers of the K loop: 2 overlaps the next tile's loads with this one's math (3, 4: MMA=1 only)"},
			{Name: "TF32", Values: []int{0, 1}, Default: 0, Doc: "1: f32 products on TF32 matrix units (MMA=1, f32, CUDA, allowed by the user only: TF32 rounds inputs to 10-bit mantissas)"},
		},
		Check: func(_ []int, p map[string]int) error {
			switch p["MMA"] {
			case 0:
				return checkGemmSIMT(p)
			case 1:
				return checkGemmMMA(p)
			}
			return fmt.Errorf("MMA=%d; must be 0 or 1", p["MMA"])
		},
	}
}

func checkGemmSIMT(p map[string]int) error {
	if p["TM"] <= 0 || p["TN"] <= 0 {
		return fmt.Errorf("TM=%d and TN=%d must be positive", p["TM"], p["TN"])
	}
	if p["BM"] == 48 || p["BN"] == 48 || p["BN"] == 256 || p["BK"] == 24 || p["BK"] == 64 {
		return fmt.Errorf("MMA=0: BM=%d, BN=%d, BK=%d: 48, BN=256, BK=24 and BK=64 are for MMA=1 only", p["BM"], p["BN"], p["BK"])
	}
	if p["BM"]%p["TM"] != 0 || p["BN"]%p["TN"] != 0 {
		return fmt.Errorf("BM=%d and BN=%d must be multiples of TM=%d and TN=%d", p["BM"], p["BN"], p["TM"], p["TN"])
	}
	if t := (p["BM"] / p["TM"]) * (p["BN"] / p["TN"]); t < 32 || t > 1024 {
		return fmt.Errorf("(BM/TM)·(BN/TN) = %d threads; must be 32..1024", t)
	}
	if w := nonZero(p, "WM") * nonZero(p, "WN"); w != 1 {
		return fmt.Errorf("MMA=0: WM=%d, WN=%d must be 1 (SIMD-group layouts are for MMA=1)", p["WM"], p["WN"])
	}
	s := nonZero(p, "STAGES")
	if s > 2 {
		return fmt.Errorf("MMA=0: STAGES=%d; the SIMT body takes 1 or 2", s)
	}
	// Its float tiles are static arrays: at most 48 KiB, every API's limit.
	if f := s * p["BK"] * (p["BM"] + p["BN"] + 2*p["PAD"]); f > 12288 {
		return fmt.Errorf("MMA=0: STAGES·BK·(BM+BN+2·PAD) = %d floats of threadgroup memory; must be at most 12288 (48 KiB)", f)
	}
	if p["TF32"] != 0 {
		return fmt.Errorf("MMA=0: TF32=%d must be 0 (TF32 is a matrix-unit mode)", p["TF32"])
	}
	return nil
}

// MMAMaxWarpTile bounds a SIMD-group's block of the tile, (BM/WM)·(BN/WN)
// elements: 128 f32 accumulators per thread, past which they spill.
const MMAMaxWarpTile = 64 * 64

func checkGemmMMA(p map[string]int) error {
	if p["TM"] != 1 || p["TN"] != 1 || p["PAD"] != 0 {
		return fmt.Errorf("MMA=1: TM=%d, TN=%d, PAD=%d must be 1, 1 and 0 (the fragment layout replaces them)", p["TM"], p["TN"], p["PAD"])
	}
	wm, wn := p["WM"], p["WN"]
	if wm <= 0 || wn <= 0 {
		return fmt.Errorf("MMA=1: WM=%d and WN=%d must be positive", wm, wn)
	}
	if p["BM"] < 32 || p["BN"] < 32 {
		return fmt.Errorf("MMA=1: BM=%d and BN=%d must be at least 32", p["BM"], p["BN"])
	}
	if p["BM"]%(8*wm) != 0 || p["BN"]%(8*wn) != 0 || p["BK"]%8 != 0 {
		return fmt.Errorf("MMA=1: BM=%d, BN=%d must be multiples of 8·WM=%d, 8·WN=%d and BK=%d of 8", p["BM"], p["BN"], 8*wm, 8*wn, p["BK"])
	}
	if t := (p["BM"] / wm) * (p["BN"] / wn); t > MMAMaxWarpTile {
		return fmt.Errorf("MMA=1: a SIMD-group's block (BM/WM)·(BN/WN) = %d elements; must be at most %d", t, MMAMaxWarpTile)
	}
	if s := p["STAGES"]; s < 1 || s > 4 {
		return fmt.Errorf("MMA=1: STAGES=%d; must be 1..4", s)
	}
	if tf := p["TF32"]; tf != 0 && tf != 1 {
		return fmt.Errorf("TF32=%d; must be 0 or 1", tf)
	}
	return nil
}

// nonZero reads a parameter that older files and hand-made maps may lack:
// absent (0) counts as 1, the parameter's default.
func nonZero(p map[string]int, name string) int {
	if v := p[name]; v != 0 {
		return v
	}
	return 1
}
