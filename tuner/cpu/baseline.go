package cpu

import (
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/tuner/device"
)

// Baseline is gonum's native BLAS where the family registered a routine
// (family_*.go); gonum's BLAS has none for f16 or bf16.
func (b *Backend) Baseline(k *kernels.Kernel, dt kernels.DType) (device.Program, string, error) {
	f, ok := impls.Get(k.Name)
	if !ok || f.baseline == nil || dt != kernels.F32 {
		return nil, "", nil
	}
	return &program{f32: f.baseline}, "gonum", nil
}
