package spec

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kerntune/kerntune/kernels"
)

// mlxVersionNeed is the oldest Metal language version an mlx kernel's
// types need, and what needs it: bfloat (a bf16 dtype, a bfloat16 buffer,
// constant or template argument) 3.1, where Metal has bfloat and MLX's
// helpers define bfloat16_t; atomic outputs of a float type 3.0, the first
// with atomic<float>. "" when any version does.
func (c *compiler) mlxVersionNeed() (version, why string) {
	s, m := c.s, c.s.Source.MLX
	if slices.Contains(s.DTypes, string(kernels.BF16)) {
		return "3.1", "dtype bf16 (bfloat)"
	}
	for i, e := range c.elems {
		if e == kernels.ElemBFloat {
			return "3.1", fmt.Sprintf("buffers[%d] (%s) of dtype bfloat16", i, s.Buffers[i].Name)
		}
	}
	for i, cn := range m.Constants {
		if cn.DType == string(kernels.ElemBFloat) {
			return "3.1", fmt.Sprintf("source.mlx.constants[%d] (%s) of dtype bfloat16", i, cn.Name)
		}
	}
	for _, t := range m.Template {
		var v string
		if json.Unmarshal(t.Value, &v) == nil && v == string(kernels.ElemBFloat) {
			return "3.1", fmt.Sprintf("source.mlx.template.%s (bfloat16)", t.Name)
		}
	}
	if m.AtomicOutputs {
		for _, o := range c.outs {
			switch e := c.elems[o]; e {
			case kernels.ElemDType, kernels.ElemFloat32, kernels.ElemFloat16:
				return "3.0", fmt.Sprintf("atomic_outputs with the float output %s (atomic<float>)", s.Buffers[o].Name)
			}
		}
	}
	return "", ""
}

// mlxCheckVersion refuses a source.mlx.metal_version older than what the
// kernel's types need.
func (c *compiler) mlxCheckVersion() {
	v := c.s.Source.MLX.MetalVersion
	if v == "" {
		return
	}
	if need, why := c.mlxVersionNeed(); need != "" && v < need {
		c.fail("source.mlx.metal_version", "", "is %s, but %s needs Metal %s or later: set %s or leave metal_version out (kerntune then compiles with the version MLX picks for the macOS that runs: 3.1 on macOS 14, 3.2 on 15, 4.0 on 26)", v, why, need, need)
	}
}
