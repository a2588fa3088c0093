package gpuhost

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/half"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// hostMemory is a Memory in host slices: handles are indices, freed
// buffers are nil, and the failAlloc-th Alloc (1-based; 0: none) fails.
type hostMemory struct {
	bufs      [][]byte
	allocs    int
	failAlloc int
	calls     int // Memory calls
}

var errNoMemory = errors.New("out of device memory")

func (h *hostMemory) Memory(f func(Memory[int]) error) error { h.calls++; return f(h) }

func (h *hostMemory) Alloc(n int) (int, error) {
	h.allocs++
	if h.allocs == h.failAlloc {
		return 0, errNoMemory
	}
	h.bufs = append(h.bufs, make([]byte, n))
	return len(h.bufs) - 1, nil
}

func (h *hostMemory) Write(dst int, src []byte) error {
	if len(src) > len(h.bufs[dst]) {
		return fmt.Errorf("write of %d bytes into %d", len(src), len(h.bufs[dst]))
	}
	copy(h.bufs[dst], src)
	return nil
}

func (h *hostMemory) Read(dst []byte, src int) error { copy(dst, h.bufs[src]); return nil }

func (h *hostMemory) Fill(dst int, word uint32, words int) error {
	FillWords(h.bufs[dst][:4*words], word)
	return nil
}

func (h *hostMemory) Free(b int) error {
	if h.bufs[b] == nil {
		return fmt.Errorf("buffer %d freed twice", b)
	}
	h.bufs[b] = nil
	return nil
}

// live counts the buffers not freed.
func (h *hostMemory) live() int {
	n := 0
	for _, b := range h.bufs {
		if b != nil {
			n++
		}
	}
	return n
}

func problem(t *testing.T, family string, c kernels.Case, dt kernels.DType) *kernels.Problem {
	t.Helper()
	k, err := kernels.Get(family)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kernels.NewSeededProblem(k, dt, c, 7)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Load writes every copy of every input, sized in whole 16-byte blocks;
// runs rotate through the copies; Close frees every buffer once.
func TestLoadRotateClose(t *testing.T) {
	for _, dt := range kernels.DTypes {
		h := &hostMemory{}
		p := problem(t, "gemv_nt", kernels.Case{Shape: []int{1, 131, 257}, Options: []string{kernels.Bias}}, dt)
		in, err := Load[int](h, p, 3, "host:test")
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Inputs) != 3 || h.live() != 3*len(p.Inputs)+1 {
			t.Fatalf("%s: %d copies, %d buffers live", dt, len(in.Inputs), h.live())
		}
		for c, ops := range in.Inputs {
			for i, b := range ops {
				buf := h.bufs[b]
				if len(buf)%16 != 0 || len(buf) != BufferBytes(dt, len(p.Inputs[i])) {
					t.Errorf("%s copy %d operand %d: %d bytes", dt, c, i, len(buf))
				}
				got := kernels.Decode(dt, buf[:len(p.Inputs[i])*dt.Size()])
				for j, x := range p.Inputs[i] {
					want := x
					if dt == kernels.F16 {
						want = half.Round(x)
					}
					if got[j] != want {
						t.Fatalf("%s copy %d operand %d element %d: %g, want %g", dt, c, i, j, got[j], want)
					}
				}
			}
		}
		if got := in.Take(7); fmt.Sprint(got) != "[0 1 2 0 1 2 0]" {
			t.Errorf("copies of 7 runs: %v", got)
		}
		if err := in.Close(); err != nil || h.live() != 0 {
			t.Errorf("close: %v, %d buffers live", err, h.live())
		}
		if err := in.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	}
}

// A failed allocation frees what was allocated and names the problem and the device.
func TestLoadFailureFreesAll(t *testing.T) {
	p := problem(t, "gemm_av", kernels.Case{Shape: []int{37, 53, 29}}, kernels.F32)
	for fail := 1; fail <= 2*len(p.Inputs)+1; fail++ {
		h := &hostMemory{failAlloc: fail}
		_, err := Load[int](h, p, 2, "host:test")
		if !errors.Is(err, errNoMemory) || !strings.Contains(err.Error(), "host:test") {
			t.Errorf("allocation %d fails: %v", fail, err)
		}
		if h.live() != 0 {
			t.Errorf("allocation %d fails: %d buffers left", fail, h.live())
		}
	}
}

// The output is poisoned with NaN in whole words and read back as float32.
func TestPoisonAndRead(t *testing.T) {
	for _, dt := range kernels.DTypes {
		for _, rows := range []int{1, 3, 131} {
			h := &hostMemory{}
			p := problem(t, "softmax", kernels.Case{Shape: []int{rows, 1}}, dt)
			in, err := Load[int](h, p, 1, "host:test")
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Poison(h); err != nil {
				t.Fatal(err)
			}
			out, err := in.ReadOutput(h)
			if err != nil || len(out) != rows {
				t.Fatalf("%s: %d outputs, %v", dt, len(out), err)
			}
			for i, v := range out {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("%s rows=%d: element %d = %g after poisoning", dt, rows, i, v)
				}
			}
			in.Close()
		}
	}
}

// Arguments follow the body's order; an absent optional input (gemv
// without bias) is bound to the first operand.
func TestArgs(t *testing.T) {
	body, err := gpu.Get("gemv_nt")
	if err != nil {
		t.Fatal(err)
	}
	for _, bias := range []bool{false, true} {
		h := &hostMemory{}
		c := kernels.Case{Shape: []int{1, 19, 300}}
		if bias {
			c.Options = []string{kernels.Bias}
		}
		p := problem(t, "gemv_nt", c, kernels.F32)
		in, err := Load[int](h, p, 2, "host:test")
		if err != nil {
			t.Fatal(err)
		}
		ops := in.Inputs[1]
		biasBuf := ops[0]
		if bias {
			biasBuf = ops[2]
		}
		hasBias := int32(0)
		if bias {
			hasBias = 1
		}
		want := fmt.Sprint([]any{ops[0], ops[1], biasBuf, in.Out, int32(19), int32(300), hasBias})
		if got := fmt.Sprint(in.Args(body, 1)); got != want {
			t.Errorf("bias %t: args %s, want %s", bias, got, want)
		}
	}
}

// An instance belongs to its device, and a closed one is refused.
func TestOf(t *testing.T) {
	h, other := &hostMemory{}, &hostMemory{}
	p := problem(t, "softmax", kernels.Case{Shape: []int{3, 37}}, kernels.F32)
	in, err := Load[int](h, p, 1, "host:test")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Of[int](in, h, "test"); got != in || err != nil {
		t.Errorf("own instance: %v", err)
	}
	if _, err := Of[int](in, other, "test"); err == nil || !strings.Contains(err.Error(), "test backend: foreign instance") {
		t.Errorf("another device's instance: %v", err)
	}
	in.Close()
	if _, err := Of[int](in, h, "test"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("closed instance: %v", err)
	}
}

func TestBufferBytes(t *testing.T) {
	for _, c := range []struct {
		dt   kernels.DType
		n    int
		want int
	}{
		{kernels.F32, 0, 16}, {kernels.F32, 1, 16}, {kernels.F32, 5, 32},
		{kernels.F16, 131, 272}, {kernels.F16, 8, 16}, {kernels.F16, 9, 32},
	} {
		got := BufferBytes(c.dt, c.n)
		if got != c.want || got%16 != 0 || got < c.n*c.dt.Size() {
			t.Errorf("BufferBytes(%s, %d) = %d, want %d", c.dt, c.n, got, c.want)
		}
	}
}

func TestFillWords(t *testing.T) {
	buf := make([]byte, 10)
	FillWords(buf, 0x7fc00000)
	if fmt.Sprintf("% x", buf) != "00 00 c0 7f 00 00 c0 7f 00 00" {
		t.Errorf("whole little-endian words only: % x", buf)
	}
}

func TestCopyGBps(t *testing.T) {
	for _, c := range []struct {
		secs []float64
		want float64
		err  string
	}{
		{[]float64{9, 1e-3, 2e-3, 1e-3}, 2, ""}, // the warmup is left out; median 1 ms: 2 × 1 MB / 1 ms
		{[]float64{1e-3, 3e-3}, 0.7, ""},
		{[]float64{1e-3}, 0, "warmup"},
		{[]float64{1, 0, 0}, 0, "not a positive time"},
		{[]float64{1, math.NaN()}, 0, "not a positive time"},
	} {
		got, err := CopyGBps(1e6, c.secs)
		testutil.Outcome(t, fmt.Sprint(c.secs), got, err, c.want, c.err)
	}
}
