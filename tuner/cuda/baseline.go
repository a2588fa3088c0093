package cuda

import (
	"errors"
	"fmt"

	"github.com/kerntune/kerntune/internal/cudadrv"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// Baseline is cuBLAS, called in the same harness, for the families that
// register a routine (baseline_gemm.go, baseline_gemv.go): cublasGemmEx
// (f32 without TF32, or f16 or bf16 with f32 accumulation) for the GEMMs,
// cublasSgemv or GemmEx with one column for gemv_nt, and the same on
// weights dequantised beforehand for qgemv (baseline_qgemv.go), and the
// unfused sequence of three GemmEx for lora (baseline_lora.go). Softmax and rmsnorm
// have no vendor routine: their entries are held to the copy bandwidth
// instead. Row-major operands are passed as their column-major transposes.
func (b *Backend) Baseline(k *kernels.Kernel, dt kernels.DType) (device.Program, string, error) {
	call, ok := blasCalls.Get(k.Name)
	if (!ok && k.Name != families.QGemv && k.Name != families.Lora) || !b.lib.HasCUBLAS() {
		return nil, "", nil
	}
	ty := cudadrv.R32F
	switch dt {
	case kernels.F16:
		ty = cudadrv.R16F
	case kernels.BF16:
		ty = cudadrv.R16BF
	}
	if k.Name == families.QGemv {
		q := &qgemvBaseline{b: b, ty: ty, deq: instanceBuffers{}}
		return preparedProgram{q.program(), q.prepare}, "cublas", nil
	}
	if k.Name == families.Lora {
		l := &loraBaseline{b: b, ty: ty, scratch: instanceBuffers{}}
		return preparedProgram{l.program(), l.prepare}, "cublas", nil
	}
	launch := func(t *cudadrv.Thread, in *instance, c int) error {
		bl, err := t.Blas()
		if err != nil {
			return err
		}
		return call(t, bl, in, c, ty)
	}
	return &program{b: b, launch: launch}, "cublas", nil
}

// blasCall runs a family's cuBLAS routine once on input copy c of in, its
// operands of cuBLAS element type ty.
type blasCall func(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, ty cudadrv.DataType) error

// blasCalls holds the cuBLAS routine of each family that has one.
var blasCalls = kernels.NewTable[blasCall]("cuBLAS baseline")

// preparedProgram is a baseline program whose instances need device
// buffers of its own (qgemv's dequantised weights, lora's x·Aᵀ) before
// any run: prepare makes them once per instance, before Run, Output and
// OutputSample time or read anything.
type preparedProgram struct {
	*program
	prepare func(t *cudadrv.Thread, in *instance) error
}

// A sampled output must prepare too (it bypassed lora's scratch once).
var _ device.SampledOutputer = preparedProgram{}

func (p preparedProgram) ready(ti device.Instance) error {
	in, err := gpuhost.Of(ti, buffers{p.b}, "cuda")
	if err != nil {
		return err
	}
	return p.b.ctx.Do(func(t *cudadrv.Thread) error { return p.prepare(t, in) })
}

func (p preparedProgram) Run(ti device.Instance, n int) ([]float64, error) {
	if err := p.ready(ti); err != nil {
		return nil, err
	}
	return p.program.Run(ti, n)
}

func (p preparedProgram) Output(ti device.Instance) ([]float32, error) {
	if err := p.ready(ti); err != nil {
		return nil, err
	}
	return p.program.Output(ti)
}

// OutputSample is Output for an output too large to bring whole (lora's
// prefill shapes): the buffers first, as for Run and Output.
func (p preparedProgram) OutputSample(ti device.Instance, s kernels.RowSample) ([]float32, int, int, error) {
	if err := p.ready(ti); err != nil {
		return nil, 0, 0, err
	}
	return p.program.OutputSample(ti, s)
}

// instanceBuffers are the device buffers that a prepared baseline makes
// per loaded problem (qgemv's dequantised weights, lora's x·Aᵀ and ones),
// freed with its program.
type instanceBuffers map[*instance][]cudadrv.DevPtr

// program is a baseline program on b whose launch runs call with the
// instance's buffers and the thread's cuBLAS handle, and whose unload
// frees every instance's buffers. A launch before prepare made the
// buffers fails, saying what (of whom) was not done before the run.
func (ib instanceBuffers) program(b *Backend, what, done string, call func(t *cudadrv.Thread, bl *cudadrv.ThreadBlas, in *instance, c int, bufs []cudadrv.DevPtr) error) *program {
	pr := &program{b: b}
	pr.launch = func(t *cudadrv.Thread, in *instance, c int) error {
		bufs, ok := ib[in]
		if !ok {
			return fmt.Errorf("%s of %s not %s before the run", what, in.Problem.Case, done)
		}
		bl, err := t.Blas()
		if err != nil {
			return err
		}
		return call(t, bl, in, c, bufs)
	}
	pr.unload = func() error {
		return b.ctx.Do(func(t *cudadrv.Thread) error {
			var first error
			for in, bufs := range ib {
				if err := freeBuffers(t, bufs); err != nil && first == nil {
					first = err
				}
				delete(ib, in)
			}
			return first
		})
	}
	return pr
}

// upload is a new device buffer holding host; nothing stays allocated
// when it fails.
func upload(t *cudadrv.Thread, host []byte) (cudadrv.DevPtr, error) {
	d, err := t.Alloc(int64(len(host)))
	if err != nil {
		return 0, err
	}
	if err := t.CopyHtoD(d, host); err != nil {
		return 0, errors.Join(err, t.Free(d))
	}
	return d, nil
}

// freeBuffers frees bufs, skipping the 0 of a buffer never made, and
// returns the first error.
func freeBuffers(t *cudadrv.Thread, bufs []cudadrv.DevPtr) error {
	var first error
	for _, d := range bufs {
		if d == 0 {
			continue
		}
		if err := t.Free(d); err != nil && first == nil {
			first = err
		}
	}
	return first
}
