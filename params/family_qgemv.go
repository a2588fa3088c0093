package params

import (
	"fmt"
	"slices"
)

// QGemv is the name of the quantized matrix-vector family: y = x·dequant(W)ᵀ
// (+ bias) with W in MLX's affine layout (mx.quantize): each row of W (n×k)
// holds k values of Bits bits packed into uint32 words from the lowest bits
// up, and every GroupSize consecutive values of a row share a scale s and a
// bias β in the activation dtype, w = s·q + β.
const QGemv = "qgemv"

// QGemvBits are the widths of a quantized value qgemv takes: those that fill
// a uint32 word exactly (MLX's 3, 5 and 6 bits pack across words).
var QGemvBits = []int{2, 4, 8}

// QGemvGroups are MLX's affine group sizes.
var QGemvGroups = []int{32, 64, 128}

// qgemvDims: bits and group_size are dims so that they are part of every
// entry's key (the class names carry them), never tuned.
var qgemvDims = []string{"m", "n", "k", "bits", "group_size"}

func qgemvFamily() *Family {
	var classes []Class
	for _, b := range QGemvBits {
		for _, g := range QGemvGroups {
			for _, c := range gemvClassRules {
				classes = append(classes, Class{qgemvClass(c.Name, b, g), fmt.Sprintf("bits=%d, group_size=%d, %s", b, g, c.Rule)})
			}
		}
	}
	return &Family{
		Name: QGemv, Doc: "y = x·dequant(W)ᵀ (+ bias); x 1×k, W n×k in MLX's affine layout (bits-bit values packed into uint32 along k, a scale and a bias per group_size values), y 1×n (quantized LLM decode)",
		Dims:     slices.Clone(qgemvDims),
		Classes:  classes,
		Classify: qgemvClassify,
		Spaces: map[string]*Space{"gpu": gpuQGemvSpace(), "cpu": {Params: []Param{
			{Name: "BN", Values: []int{4, 8, 16, 32, 64, 128, 256}, Default: 32, Doc: "rows of W per work chunk"},
			{Name: "ROWS", Values: []int{1, 2, 4}, Default: 1, Doc: "rows of W sharing each load of x"},
			threadsParam,
		}}},
	}
}

// gemvClassRules are gemv_nt's classes, which qgemv keeps per bits and group size.
var gemvClassRules = []Class{
	{"tiny", "n < 2048 and k < 2048"},
	{"largeK_smallN", "k ≥ 2048 and n < 2048"},
	{"largeN", "n > 4096"},
	{"mid", "otherwise (2048 ≤ n ≤ 4096)"},
}

// qgemvClass is the class name of gemv class c at bits b and group size g:
// "largeN_q4g64".
func qgemvClass(c string, b, g int) string { return fmt.Sprintf("%s_q%dg%d", c, b, g) }

func qgemvClassify(shape []int) (string, error) {
	if err := checkDims(QGemv, qgemvDims, shape, [][2]int{{1, 2}}); err != nil {
		return "", err
	}
	if shape[0] != 1 {
		return "", fmt.Errorf("qgemv: m must be 1 (y = x·dequant(W)ᵀ with x of 1×k), got m=%d", shape[0])
	}
	n, k, bits, g := shape[1], shape[2], shape[3], shape[4]
	if !slices.Contains(QGemvBits, bits) {
		return "", fmt.Errorf("qgemv: bits=%d is not supported (allowed: 2, 4, 8)", bits)
	}
	if !slices.Contains(QGemvGroups, g) {
		return "", fmt.Errorf("qgemv: group_size=%d is not supported (allowed: 32, 64, 128)", g)
	}
	if k%g != 0 {
		return "", fmt.Errorf("qgemv: k=%d must be a multiple of group_size=%d", k, g)
	}
	c, err := gemvClassify([]int{1, n, k})
	if err != nil {
		return "", err
	}
	return qgemvClass(c, bits, g), nil
}

func gpuQGemvSpace() *Space {
	return &Space{
		Params: []Param{
			{Name: "TPR", Values: []int{2, 4, 8, 16, 32, 64, 128}, Default: 16, Doc: "threads per output row: the K-split across threads (above 32: across SIMD-groups)"},
			{Name: "RPB", Values: []int{1, 2, 4, 8, 16, 32}, Default: 4, Doc: "row segments per threadgroup"},
			{Name: "RPT", Values: []int{1, 2, 4, 8}, Default: 1, Doc: "rows per segment, sharing each load of x"},
			{Name: "VEC", Values: []int{1, 2, 4}, Default: 2, Doc: "packed uint32 words per load"},
			{Name: "UNROLL", Values: []int{1, 2, 4}, Default: 1, Doc: "independent loads in flight per thread"},
		},
		Check: func(shape []int, p map[string]int) error {
			if t := p["TPR"] * p["RPB"]; t > 1024 || t < 32 {
				return fmt.Errorf("TPR×RPB=%d threads per threadgroup must be in 32..1024", t)
			}
			// A load of VEC words stays within one group (one scale and bias).
			if len(shape) == 5 && shape[3] > 0 && p["VEC"] > shape[4]*shape[3]/32 {
				return fmt.Errorf("VEC=%d words exceed the %d words of a group (bits=%d, group_size=%d)", p["VEC"], shape[4]*shape[3]/32, shape[3], shape[4])
			}
			return nil
		},
	}
}
