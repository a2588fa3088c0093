package cpu

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kerntune/kerntune/internal/bf16"
	"github.com/kerntune/kerntune/internal/half"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

func init() {
	device.Register("cpu", func() (device.Backend, error) { return Open() },
		device.Traits{AutoRank: 3}) // auto: the last resort, it runs everywhere
}

// Backend runs the pure-Go kernels on this machine's CPU.
type Backend struct {
	info device.DeviceInfo
}

// Open detects the CPU and measures its copy bandwidth. No arithmetic peak
// is recorded: the SIMD width and clock a pure-Go program could use are not
// known, so GEMM rooflines give GFLOP/s without a percentage.
func Open() (*Backend, error) {
	// The key, name and core count come from params.LocalDevice, so that an
	// application on this CPU finds its entries without options.
	local := params.LocalDevice()
	cores := local.ComputeUnits
	llc := lastLevelCache()
	b := &Backend{info: device.DeviceInfo{
		Key:          local.Key,
		Name:         local.Name,
		Backend:      local.Backend,
		Family:       local.Family,
		ComputeUnits: cores,
		LLCBytes:     llc,
		// Ceilings far above any CPU: 64 flop/cycle at 6 GHz, 400 GB/s per core.
		PeakFlops:     float64(cores) * 6e9 * 64,
		PeakBandwidth: float64(cores) * 400e9,
		Facts: map[string]float64{
			"llc_bytes":      float64(llc),
			"bandwidth_gbps": machineBandwidth(),
		},
		// Goroutines beyond twice the cores only add scheduling.
		Limits:    device.Limits{Threads: 2 * cores},
		OnHostCPU: true,
	}}
	return b, nil
}

// DeviceKey is the CPU's key in the params file: the model name and core count.
func DeviceKey(model string, cores int) string { return paramfile.CPUDeviceKey(model, cores) }

// Info describes the CPU.
func (b *Backend) Info() device.DeviceInfo { return b.info }

// Close releases nothing: the CPU backend holds no device resources.
func (b *Backend) Close() error { return nil }

// instance holds a problem's input copies in the kernel's storage type.
type instance struct {
	p    *kernels.Problem
	in32 [][][]float32 // [copy][operand]
	in16 [][][]uint16
	// words holds the integer operands (kernels.Elem of an integer type:
	// qgemv's packed weights) as uint32 words, [copy][operand], nil for a
	// float operand, whose slot in in32 or in16 it is instead; nil when the
	// problem has no integer operand.
	words [][][]uint32
	out32 []float32
	out16 []uint16
	// The outputs live in guarded buffers: Output checks that a candidate
	// wrote nothing past the end (Go's bounds checks miss a write through a
	// slice's spare capacity).
	g32    *kernels.Guarded[float32]
	g16    *kernels.Guarded[uint16]
	copies int
	next   int
}

func (in *instance) Close() error { return nil }

// Load converts the inputs to the dtype's storage and replicates them;
// integer operands become uint32 words whatever the dtype.
func (b *Backend) Load(p *kernels.Problem, copies int) (device.Instance, error) {
	if copies < 1 {
		copies = 1
	}
	inst := &instance{p: p, copies: copies}
	outLen := p.Kernel.OutLen(p.Case.Shape)
	isInt := make([]bool, len(p.Inputs))
	for i, op := range p.Kernel.Inputs(p.Case) {
		if i < len(isInt) && !op.Elem.In(p.DType).IsFloat() {
			isInt[i] = true
		}
	}
	for c := 0; c < copies; c++ {
		if slices.Contains(isInt, true) {
			words := make([][]uint32, len(p.Inputs))
			for i, x := range p.Inputs {
				if isInt[i] {
					words[i] = make([]uint32, len(x))
					for j, v := range x {
						words[i][j] = math.Float32bits(v)
					}
				}
			}
			inst.words = append(inst.words, words)
		}
		switch p.DType {
		case kernels.F32:
			ops := make([][]float32, len(p.Inputs))
			for i, x := range p.Inputs {
				if !isInt[i] {
					ops[i] = append([]float32(nil), x...)
				}
			}
			inst.in32 = append(inst.in32, ops)
		case kernels.F16, kernels.BF16:
			ops := make([][]uint16, len(p.Inputs))
			for i, x := range p.Inputs {
				if isInt[i] {
					continue
				}
				h := make([]uint16, len(x))
				if p.DType == kernels.BF16 {
					for j, v := range x {
						h[j] = bf16.FromFloat32(v)
					}
				} else {
					for j, v := range x {
						h[j] = half.FromFloat32(v)
					}
				}
				ops[i] = h
			}
			inst.in16 = append(inst.in16, ops)
		default:
			return nil, fmt.Errorf("cpu backend: dtype %q not supported", p.DType)
		}
	}
	if p.DType == kernels.F32 {
		inst.g32 = kernels.NewGuarded[float32](outLen)
		inst.out32 = inst.g32.Data()
	} else {
		inst.g16 = kernels.NewGuarded[uint16](outLen)
		inst.out16 = inst.g16.Data()
	}
	return inst, nil
}

// program runs one kernel function on an instance's copy. f16 and bf16
// both hold their values as uint16 bits.
type program struct {
	f32  func(p *kernels.Problem, in [][]float32, out []float32)
	f16  func(p *kernels.Problem, in [][]uint16, out []uint16)
	bf16 func(p *kernels.Problem, in [][]uint16, out []uint16)
	// wf32, wf16 and wbf16 take the place of f32, f16 and bf16 for a
	// family with integer operands (qgemv's packed weights): words[i] is
	// operand i as uint32 words when it is an integer operand, in[i] when
	// it is a float one (see instance.words).
	wf32  func(p *kernels.Problem, in [][]float32, words [][]uint32, out []float32)
	wf16  func(p *kernels.Problem, in [][]uint16, words [][]uint32, out []uint16)
	wbf16 func(p *kernels.Problem, in [][]uint16, words [][]uint32, out []uint16)
}

func (pr *program) Close() error { return nil }

func (pr *program) runOnce(inst *instance, copy int) error {
	var words [][]uint32
	if inst.words != nil {
		words = inst.words[copy]
	}
	if inst.in32 != nil {
		return runImpl(inst.p, "f32", pr.f32, pr.wf32, inst.in32[copy], words, inst.out32)
	}
	f, wf := pr.f16, pr.wf16
	if inst.p.DType == kernels.BF16 {
		f, wf = pr.bf16, pr.wbf16
	}
	return runImpl(inst.p, string(inst.p.DType), f, wf, inst.in16[copy], words, inst.out16)
}

// runImpl runs one input copy on f, or on wf for a problem with integer
// operands (words, the copy's, not nil: Load makes them for every copy),
// whose element type is named dt; it fails where the program has no such
// implementation.
func runImpl[T float32 | uint16](p *kernels.Problem, dt string, f func(*kernels.Problem, [][]T, []T), wf func(*kernels.Problem, [][]T, [][]uint32, []T), in [][]T, words [][]uint32, out []T) error {
	switch {
	case words == nil && f != nil:
		f(p, in, out)
	case words != nil && wf != nil:
		wf(p, in, words, out)
	case words == nil:
		return fmt.Errorf("no %s implementation", dt)
	default:
		return fmt.Errorf("no %s implementation taking integer operands", dt)
	}
	return nil
}

// Run times n runs with the monotonic clock, rotating input copies.
func (pr *program) Run(ti device.Instance, n int) ([]float64, error) {
	inst, ok := ti.(*instance)
	if !ok {
		return nil, fmt.Errorf("cpu backend: foreign instance %T", ti)
	}
	ts := make([]float64, n)
	for i := range ts {
		c := inst.next % inst.copies
		inst.next++
		start := time.Now()
		if err := pr.runOnce(inst, c); err != nil {
			return nil, err
		}
		ts[i] = time.Since(start).Seconds()
	}
	return ts, nil
}

// Output poisons the output with NaN, runs once on copy 0 and returns the output.
func (pr *program) Output(ti device.Instance) ([]float32, error) {
	inst, err := pr.outputRun(ti)
	if err != nil {
		return nil, err
	}
	if inst.out32 != nil {
		return append([]float32(nil), inst.out32...), nil
	}
	out := make([]float32, len(inst.out16))
	to := widen16(inst.p.DType)
	for i, h := range inst.out16 {
		out[i] = to(h)
	}
	return out, nil
}

// outputRun poisons the output with NaN, runs once on copy 0 and checks
// the canaries around the output.
func (pr *program) outputRun(ti device.Instance) (*instance, error) {
	inst, ok := ti.(*instance)
	if !ok {
		return nil, fmt.Errorf("cpu backend: foreign instance %T", ti)
	}
	nan := float32(math.NaN())
	for i := range inst.out32 {
		inst.out32[i] = nan
	}
	nan16 := uint16(0x7e00) // f16 quiet NaN
	if inst.p.DType == kernels.BF16 {
		nan16 = 0x7fc0
	}
	for i := range inst.out16 {
		inst.out16[i] = nan16
	}
	if err := pr.runOnce(inst, 0); err != nil {
		return nil, err
	}
	if err := inst.checkGuards(); err != nil {
		return nil, err
	}
	return inst, nil
}

// OutputSample runs as Output does and returns only the sample's rows
// (device.SampledOutputer), without copying a large output.
func (pr *program) OutputSample(ti device.Instance, s kernels.RowSample) ([]float32, int, int, error) {
	inst, err := pr.outputRun(ti)
	if err != nil {
		return nil, 0, 0, err
	}
	if inst.out32 != nil {
		rows, bad := s.Extract(inst.out32)
		return rows, bad, len(inst.out32), nil
	}
	bad := -1
	exp := uint16(0x7c00) // f16's exponent bits; all set: Inf or NaN
	if inst.p.DType == kernels.BF16 {
		exp = 0x7f80
	}
	for i, h := range inst.out16 {
		if h&exp == exp {
			bad = i
			break
		}
	}
	to := widen16(inst.p.DType)
	rows := make([]float32, 0, s.Elems())
	for _, r := range s.Rows {
		lo := r * s.RowLen
		if lo+s.RowLen > len(inst.out16) {
			break
		}
		for _, h := range inst.out16[lo : lo+s.RowLen] {
			rows = append(rows, to(h))
		}
	}
	return rows, bad, len(inst.out16), nil
}

// Build binds a candidate's parameters to the family's kernel functions.
func (b *Backend) Build(k *kernels.Kernel, _ kernels.DType, c search.Candidate) (device.Program, error) {
	f, ok := impls.Get(k.Name)
	if !ok {
		return nil, fmt.Errorf("cpu backend has no implementation of %s", k.Name)
	}
	pr, err := f.build(c)
	if err != nil {
		return nil, err
	}
	return pr, nil
}

// widen16 converts one stored 16-bit value of dt to float32.
func widen16(dt kernels.DType) func(uint16) float32 {
	if dt == kernels.BF16 {
		return bf16.ToFloat32
	}
	return half.ToFloat32
}

// checkGuards reports a write outside the output and re-arms the canaries.
func (in *instance) checkGuards() error {
	var err error
	if in.g32 != nil {
		err = in.g32.Check()
		in.g32.Arm()
	}
	if in.g16 != nil {
		err = in.g16.Check()
		in.g16.Arm()
	}
	return err
}
