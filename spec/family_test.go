package spec

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
)

// A spec kernel follows the family it implements: its problems are drawn
// with the family's fill (softmax's large logits), it has the bias option
// only when it declares bias, and its body receives the spec language's eps.
func TestImplementsFollowsFamily(t *testing.T) {
	const softmaxSpec = `{
  "name": "my_softmax",
  "implements": "softmax",
  "source": {"body": "const int r = GROUP_X; if (LID == 0) { for (int c = 0; c < cols; c++) STORE(y, r * cols + c, 0.0f); }"},
  "buffers": [{"name": "x", "io": "in", "length": "rows * cols"}, {"name": "y", "io": "out", "length": "rows * cols"}],
  "scalars": [{"name": "cols", "type": "int", "value": "cols"}, {"name": "e", "type": "float", "value": "eps"}],
  "params": [{"name": "TG", "values": [32]}],
  "launch": {"threads": "TG", "grid": ["rows"]}
}`
	c, err := Parse([]byte(softmaxSpec), "my_softmax.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{3, 300}}, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	large := 0
	for _, v := range p.Inputs[0] {
		if v >= 40 {
			large++
		}
	}
	if large == 0 {
		t.Error("a kernel implementing softmax drew no large logits")
	}
	if _, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{3, 300}, Options: []string{kernels.Bias}}, rand.New(rand.NewPCG(5, 6))); err == nil || !strings.Contains(err.Error(), `no option "bias"`) {
		t.Errorf("a bias case of a softmax kernel: %v", err)
	}
	sc := c.Body.Scalars(kernels.Case{Shape: []int{3, 300}}, c.Kernel.Scalars)
	if len(sc) != 2 || sc[0] != int32(300) || sc[1] != float32(kernels.RMSNormEps) {
		t.Errorf("scalars %v, want [300 %v]", sc, float32(kernels.RMSNormEps))
	}

	gemv := loadExample(t, "m1_gemv.json") // declares bias
	if !slices.Contains(gemv.Kernel.Options, kernels.Bias) || gemv.Kernel.Fill != nil {
		t.Errorf("m1_gemv: options %v, fill set %v; want bias and gemv_nt's uniform draw", gemv.Kernel.Options, gemv.Kernel.Fill != nil)
	}
}
