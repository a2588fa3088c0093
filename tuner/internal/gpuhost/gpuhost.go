package gpuhost

import (
	"errors"
	"fmt"
	"math"

	"github.com/kerntune/kerntune/internal/stats"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/tuner/device"
)

// Memory is one API's buffer operations; B is its buffer handle (a CUDA
// device pointer, an OpenCL cl_mem, a Metal shared-storage buffer).
type Memory[B any] interface {
	// Alloc allocates bytes of device memory; the contents are undefined.
	Alloc(bytes int) (B, error)
	// Write copies src to the start of dst.
	Write(dst B, src []byte) error
	// Read copies the first len(dst) bytes of src to dst, after the
	// commands queued before it have finished.
	Read(dst []byte, src B) error
	// Fill sets the first words 32-bit words of dst to word.
	Fill(dst B, word uint32, words int) error
	Free(B) error
}

// Device gives the buffer operations where an API allows them: on the
// CUDA context's locked thread, on Metal's GPU thread, or directly.
// Implementations must be comparable: an instance remembers its device.
type Device[B any] interface {
	Memory(f func(Memory[B]) error) error
}

// Instance is a problem resident on a device: copies of its inputs, which
// runs rotate through, and one output. It implements device.Instance.
type Instance[B any] struct {
	Problem *kernels.Problem
	Inputs  [][]B // [copy][operand]
	// Out is the first output, Outs all of them (Kernel.OutOperands).
	Out    B
	Outs   []B
	OutLen int // output elements, of every output together
	outOps []kernels.Operand

	dev    Device[B]
	hasOut bool
	closed bool
	next   int
}

// BufferBytes is the allocation for n elements of dt: at least 16 bytes
// and a multiple of 16, so that every buffer can be filled word-wise and
// copied by a blit (macOS wants blit sizes and offsets in multiples of 4).
func BufferBytes(dt kernels.DType, n int) int { return max(16, (n*dt.Size()+15)/16*16) }

// Load writes copies (at least one) distinct copies of the problem's
// inputs to the device and allocates the output; where names the device
// in an error.
func Load[B any](d Device[B], p *kernels.Problem, copies int, where string) (*Instance[B], error) {
	in := &Instance[B]{Problem: p, OutLen: p.Kernel.OutLen(p.Case.Shape), dev: d}
	in.outOps = p.Kernel.OutOperands(p.Case)
	ops := p.Kernel.Inputs(p.Case)
	host := make([][]byte, len(p.Inputs))
	for i, x := range p.Inputs {
		e := kernels.ElemOf(p.DType)
		if i < len(ops) {
			e = ops[i].Elem.In(p.DType)
		}
		host[i] = e.Encode(x)
	}
	err := d.Memory(func(m Memory[B]) error {
		for range max(copies, 1) {
			ops := make([]B, 0, len(host))
			for _, h := range host {
				buf, err := m.Alloc(max(16, (len(h)+15)/16*16))
				if err != nil {
					in.Inputs = append(in.Inputs, ops) // freed by Close
					return err
				}
				ops = append(ops, buf)
				if err := m.Write(buf, h); err != nil {
					in.Inputs = append(in.Inputs, ops)
					return err
				}
			}
			in.Inputs = append(in.Inputs, ops)
		}
		for i := range in.outOps {
			out, err := m.Alloc(in.outBytes(i))
			if err != nil {
				return err
			}
			in.Outs, in.hasOut = append(in.Outs, out), true
		}
		in.Out = in.Outs[0]
		return nil
	})
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("loading %s on %s: %w", p.Case, where, err)
	}
	return in, nil
}

// Close frees the device buffers.
func (in *Instance[B]) Close() error {
	if in.closed {
		return nil
	}
	return in.dev.Memory(func(m Memory[B]) error {
		var errs []error
		for _, ops := range in.Inputs {
			for _, buf := range ops {
				errs = append(errs, m.Free(buf))
			}
		}
		in.Inputs = nil
		for _, out := range in.Outs {
			errs = append(errs, m.Free(out))
		}
		in.Outs, in.hasOut = nil, false
		in.closed = true
		return errors.Join(errs...)
	})
}

// Closed reports whether Close has freed the instance's buffers.
func (in *Instance[B]) Closed() bool { return in.closed }

// Of returns ti as an open instance of device d, or an error naming the
// backend when it is another backend's or closed.
func Of[B any](ti device.Instance, d Device[B], backend string) (*Instance[B], error) {
	in, ok := ti.(*Instance[B])
	if !ok || in.dev != d {
		return nil, fmt.Errorf("%s backend: foreign instance %T", backend, ti)
	}
	if in.closed {
		return nil, fmt.Errorf("%s backend: instance is closed", backend)
	}
	return in, nil
}

// Next is the input copy of the next run: the copies in turn.
func (in *Instance[B]) Next() int {
	c := in.next % len(in.Inputs)
	in.next++
	return c
}

// Take is the input copies of the next n runs.
func (in *Instance[B]) Take(n int) []int {
	cs := make([]int, n)
	for i := range cs {
		cs[i] = in.Next()
	}
	return cs
}

// Input is operand i of input copy cp. An absent optional input (gemv's
// bias) is bound to the first operand, which the kernel never reads there.
func (in *Instance[B]) Input(cp, i int) B {
	ops := in.Inputs[cp]
	if i < len(ops) {
		return ops[i]
	}
	return ops[0]
}

// Args are the arguments of one run of body on input copy cp, in the
// body's order: the buffers of its In and Out arguments and the case's
// scalars for its Int and Float arguments.
func (in *Instance[B]) Args(body *gpu.Body, cp int) []any {
	scalars := body.Scalars(in.Problem.Case, in.Problem.Kernel.Scalars)
	args := make([]any, 0, len(body.Args))
	nIn, nOut, nScalar := 0, 0, 0
	for _, a := range body.Args {
		switch a.Kind {
		case gpu.In, gpu.Words:
			args = append(args, in.Input(cp, nIn))
			nIn++
		case gpu.Out:
			args = append(args, in.Outs[min(nOut, len(in.Outs)-1)])
			nOut++
		default:
			args = append(args, scalars[nScalar])
			nScalar++
		}
	}
	return args
}

// OutBytes is the size of the (first) output buffer.
func (in *Instance[B]) OutBytes() int { return in.outBytes(0) }

func (in *Instance[B]) outElem(i int) kernels.Elem { return in.outOps[i].Elem.In(in.Problem.DType) }

func (in *Instance[B]) outBytes(i int) int {
	return max(16, (in.outOps[i].Len*in.outElem(i).Size()+15)/16*16)
}

// Poison fills the outputs with NaN (a poison value for integer types),
// so that elements a kernel does not write fail verification; a kernel
// with an Init value gets its outputs filled with that instead, as MLX
// fills them before the kernel runs.
func (in *Instance[B]) Poison(m Memory[B]) error {
	for i, out := range in.Outs {
		e := in.outElem(i)
		if v := in.Problem.Kernel.Init; v != nil {
			if err := m.Write(out, e.Fill(*v, in.outOps[i].Len)); err != nil {
				return err
			}
			continue
		}
		if err := m.Fill(out, patternWord(e.Poison()), in.outBytes(i)/4); err != nil {
			return err
		}
	}
	return nil
}

// patternWord repeats a 1-, 2- or 4-byte pattern over a 32-bit word
// (an 8-byte one is two equal words).
func patternWord(p []byte) uint32 {
	var w [4]byte
	for i := range w {
		w[i] = p[i%len(p)]
	}
	return uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 | uint32(w[3])<<24
}

// ReadOutput reads the outputs back as float32 containers (kernels.Elem),
// one after another.
func (in *Instance[B]) ReadOutput(m Memory[B]) ([]float32, error) {
	var all []float32
	for i, out := range in.Outs {
		buf := make([]byte, in.outBytes(i))
		if err := m.Read(buf, out); err != nil {
			return nil, err
		}
		all = append(all, in.outElem(i).Decode(buf, in.outOps[i].Len)...)
	}
	return all, nil
}

// NaNWord is a 32-bit word of NaN in dt: one f32 quiet NaN, or two f16 or
// bf16 ones.
func NaNWord(dt kernels.DType) uint32 { return patternWord(kernels.ElemOf(dt).Poison()) }

// FillWords sets every whole 32-bit word of dst to word, little-endian:
// Fill for a buffer the host can write.
func FillWords(dst []byte, word uint32) {
	for i := 0; i+4 <= len(dst); i += 4 {
		dst[i], dst[i+1], dst[i+2], dst[i+3] = byte(word), byte(word>>8), byte(word>>16), byte(word>>24)
	}
}

// CopyGBps is the read plus write bandwidth, in GB/s rounded to 0.1, of
// copies of bytes each that took secs seconds; the first is a warmup and
// left out, the rest give their median.
func CopyGBps(bytes int, secs []float64) (float64, error) {
	if len(secs) < 2 {
		return 0, fmt.Errorf("%d copy timings, want a warmup and at least one more", len(secs))
	}
	med := stats.Median(secs[1:])
	if !(med > 0) || math.IsInf(med, 0) {
		return 0, fmt.Errorf("copy time %g s is not a positive time", med)
	}
	return math.Round(2*float64(bytes)/med/1e8) / 10, nil
}

// RunsPerSample is how many back-to-back runs one timed sample holds (a
// Metal command buffer, a group of CUDA launches between two events) for a
// kernel taking perDispatch seconds: enough to last target seconds, at
// least one and at most limit.
func RunsPerSample(perDispatch, target float64, limit int) int {
	if !(perDispatch > 0) || math.IsInf(perDispatch, 0) {
		return 1
	}
	d := math.Ceil(target / perDispatch)
	if d < 1 {
		return 1
	}
	if d > float64(limit) {
		return limit
	}
	return int(d)
}

// RevisedRuns is the runs per sample for the next timing of
// a program on an instance, given the current count d and the median time
// per run (perDispatch) of the samples just taken. The first estimate comes
// from a kernel's first command buffers, when its pipeline, its buffers and
// perhaps the GPU's clocks are still cold; the tuner's warmup runs and
// every later timing revise it from warm samples. The count changes only
// when the warm estimate is off by more than a factor of two, so that
// consecutive timings of one candidate keep one count.
func RevisedRuns(d int, perDispatch, target float64, limit int) int {
	if d < 1 {
		return RunsPerSample(perDispatch, target, limit)
	}
	if !(perDispatch > 0) || math.IsInf(perDispatch, 0) {
		return d
	}
	ideal := RunsPerSample(perDispatch, target, limit)
	if ideal > 2*d || 2*ideal < d {
		return ideal
	}
	return d
}

// PruneClosed drops the runs-per-sample counts of closed
// instances: a program (the baseline, a finalist) outlives the instances it
// ran on, and its counts would otherwise keep every one of them, with its
// host state, for as long as the program lives.
func PruneClosed[B any](counts map[*Instance[B]]int) {
	for in := range counts {
		if in.Closed() {
			delete(counts, in)
		}
	}
}
