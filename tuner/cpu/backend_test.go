package cpu

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/tunertest"
)

// Every family's default candidate and gonum baseline pass verification on
// the odd shapes through the backend's Load/Build/Output path, for both dtypes.
func TestBackendVerifiesEveryFamily(t *testing.T) {
	b, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	info := b.Info()
	if !strings.HasPrefix(info.Key, "cpu:") || info.ComputeUnits < 1 || info.Facts["bandwidth_gbps"] <= 0 || info.LLCBytes <= 0 {
		t.Fatalf("device info %+v", info)
	}
	rng := rand.New(rand.NewPCG(4, 5))
	for _, k := range kernels.All() {
		def := tunertest.Defaults(t, k, "cpu")
		for _, dt := range kernels.DTypes {
			prog, err := b.Build(k, dt, def)
			if err != nil {
				t.Fatalf("%s %s: %v", k.Name, dt, err)
			}
			base, name, err := b.Baseline(k, dt)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range k.Odd {
				p, inst := tunertest.Load(t, b.Load, k, dt, c, rng, 3)
				verifyOutput(t, prog, inst, p, k.Name+" "+string(dt)+" "+c.String())
				if base != nil {
					verifyOutput(t, base, inst, p, "baseline "+name+" for "+k.Name+" "+string(dt)+" "+c.String())
				}
				ts, err := prog.Run(inst, 4)
				if err != nil || len(ts) != 4 {
					t.Fatalf("Run: %v %v", ts, err)
				}
				for _, x := range ts {
					if x <= 0 {
						t.Errorf("non-positive duration %v", x)
					}
				}
			}
		}
	}
}

func TestLimitsCapThreads(t *testing.T) {
	b, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	info := b.Info()
	if info.Limits.Threads != 2*info.ComputeUnits || info.Limits.GPU != nil {
		t.Fatalf("limits %+v on %d cores, want THREADS ≤ 2 × cores and no GPU limits", info.Limits, info.ComputeUnits)
	}
	k, _ := kernels.Get("softmax")
	cons := info.Limits.Constraints(k, kernels.F32)
	if len(cons) != 1 {
		t.Fatalf("%d constraints", len(cons))
	}
	n := info.Limits.Threads
	if cons[0].Check(search.Candidate{"THREADS": n}) != nil || cons[0].Check(search.Candidate{"THREADS": n + 1}) == nil {
		t.Errorf("THREADS must be limited to 2 × cores = %d", n)
	}
}

// A single float32 accumulator over a 151936-word row misses the f32
// tolerance; the blocked sum keeps every UNROLL within it.
func TestRMSNormLongRowAccuracy(t *testing.T) {
	b, _ := Open()
	k := tunertest.Kernel(t, "rmsnorm")
	p, inst := tunertest.Load(t, b.Load, k, kernels.F32, kernels.Case{Shape: []int{2, 151936}}, rand.New(rand.NewPCG(1, 1)), 1)
	for _, u := range []int{1, 2, 4, 8} {
		prog, _ := b.Build(k, kernels.F32, search.Candidate{"ROWS": 1, "UNROLL": u, "THREADS": 2})
		verifyOutput(t, prog, inst, p, "UNROLL="+strconv.Itoa(u))
	}
}

// A large output's sample taken in place holds the rows the whole output
// has, in f32, f16 and bf16, and the scan finds the first unwritten element.
func TestOutputSample(t *testing.T) {
	b, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	k := tunertest.Kernel(t, "rmsnorm")
	def := tunertest.Defaults(t, k, "cpu")
	for _, dt := range kernels.DTypes {
		p, err := kernels.NewSeededProblem(k, dt, kernels.Case{Shape: []int{1100, 1024}}, 3)
		if err != nil {
			t.Fatal(err)
		}
		s, sampled := p.SampleRows(kernels.Salt("c"))
		if !sampled {
			t.Fatal("not sampled")
		}
		inst, err := b.Load(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := b.Build(k, dt, def)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := prog.Output(inst)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.Extract(whole)
		rows, bad, n, err := prog.(device.SampledOutputer).OutputSample(inst, s)
		if err != nil || bad != -1 || n != len(whole) || len(rows) != len(want) {
			t.Fatalf("%s: %d rows' elements, first bad %d, length %d, %v", dt, len(rows), bad, n, err)
		}
		for i := range want {
			if rows[i] != want[i] {
				t.Fatalf("%s: sampled element %d is %g, the whole output has %g", dt, i, rows[i], want[i])
			}
		}
		if err := p.VerifySample(s, rows, bad, n, nil); err != nil {
			t.Errorf("%s: %v", dt, err)
		}
		// An unwritten element: a program that skips the last row.
		in := inst.(*instance)
		skip := &program{f32: func(p *kernels.Problem, in [][]float32, out []float32) {
			prog.(*program).f32(p, in, out)
			out[len(out)-5] = float32(math.NaN())
		}, f16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
			prog.(*program).f16(p, in, out)
			out[len(out)-5] = 0x7e00
		}, bf16: func(p *kernels.Problem, in [][]uint16, out []uint16) {
			prog.(*program).bf16(p, in, out)
			out[len(out)-5] = 0x7f80 // +Inf: overflowed
		}}
		if _, bad, _, err := skip.OutputSample(in, s); err != nil || bad != len(whole)-5 {
			t.Errorf("%s: first bad element %d (%v), want %d", dt, bad, err, len(whole)-5)
		}
	}
}

// verifyOutput runs prog on inst and checks its output against p's
// reference, reporting a mismatch under label.
func verifyOutput(t *testing.T, prog device.Program, inst device.Instance, p *kernels.Problem, label string) {
	t.Helper()
	out, err := prog.Output(inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(out); err != nil {
		t.Errorf("%s: %v", label, err)
	}
}

// A run picks the implementation for the instance's dtype and operands
// (words-taking ones for qgemv's integer operands), never one of the other
// kind, and names the one a program lacks.
func TestRunPicksImplementation(t *testing.T) {
	b := &Backend{}
	ran := ""
	prog := &program{
		f32:  func(*kernels.Problem, [][]float32, []float32) { ran = "f32" },
		bf16: func(*kernels.Problem, [][]uint16, []uint16) { ran = "bf16" },
		wf32: func(*kernels.Problem, [][]float32, [][]uint32, []float32) { ran = "wf32" },
		wf16: func(*kernels.Problem, [][]uint16, [][]uint32, []uint16) { ran = "wf16" },
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		family string
		dt     kernels.DType
		want   string // the implementation run, or the error
	}{
		{"softmax", kernels.F32, "f32"},
		{"softmax", kernels.BF16, "bf16"},
		{"softmax", kernels.F16, "no f16 implementation"},
		{"qgemv", kernels.F32, "wf32"},
		{"qgemv", kernels.BF16, "no bf16 implementation taking integer operands"},
		{"qgemv", kernels.F16, "wf16"},
	} {
		k := tunertest.Kernel(t, c.family)
		_, inst := tunertest.Load(t, b.Load, k, c.dt, k.Odd[0], rng, 1)
		ran = ""
		err := prog.runOnce(inst.(*instance), 0)
		got := ran
		if err != nil {
			got = err.Error()
		}
		if got != c.want || (err != nil) == (ran != "") {
			t.Errorf("%s %s: ran %q, error %v; want %q", c.family, c.dt, ran, err, c.want)
		}
	}
}
