package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/cover"
	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/mslemu"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// emuCand is one Metal candidate the emulation runs on its family's odd shapes.
type emuCand struct {
	k    *kernels.Kernel
	b    *Body
	dt   kernels.DType
	c    search.Candidate
	name string
	src  string
	// bfloat: the bf16 source with __HAVE_BFLOAT__ defined (MSL's bfloat
	// and its simdgroup matrices) instead of ushort storage.
	bfloat bool
}

// appleGPU holds candidates to what every Apple GPU with simdgroup_matrix
// (Apple7 on) runs: 1024 threads and 32 KiB of threadgroup memory per
// threadgroup, SIMD-groups of 32.
var appleGPU = Limits{API: Metal, MaxThreads: 1024, MaxShared: 32 << 10, SIMDWidth: 32, Features: []Feature{SIMDMatrix}}

// emuCands is a covering sample of every family's Metal candidates that
// fit appleGPU in each dtype, in which every value of every parameter occurs, and for the GEMMs
// every value among the matrix-unit candidates (MMA=1) again, plus the
// family's default; with full (make test-full) every pair of values. bf16
// candidates run in both of their branches (bfloat, ushort storage).
func emuCands(t *testing.T, full bool) []emuCand {
	t.Helper()
	strength := cover.Values
	if full {
		strength = cover.Pairs
	}
	var out []emuCand
	for _, k := range kernels.All() {
		b := testutil.Lookup(t, Get, k.Name)
		ps, _ := k.Space("metal")
		params := searchParams(ps)
		for _, dt := range kernels.DTypes {
			var cands, mma []search.Candidate
			cons := b.Constraints(appleGPU, dt)
			for _, c := range spaceOf(t, k) {
				if slices.IndexFunc(cons, func(con search.Constraint) bool { return con.Check(c) != nil }) < 0 {
					cands = append(cands, c)
					if c["MMA"] == 1 {
						mma = append(mma, c)
					}
				}
			}
			sample := cover.Sample(params, cands, 1, strength)
			if m := cover.Missing(params, cands, sample.Sample, strength); len(m) > 0 {
				t.Fatalf("%s %s: the covering sample misses %s", k.Name, dt, strings.Join(m, " "))
			}
			picked := sample.Sample
			if len(mma) > 0 {
				ms := cover.Sample(params, mma, 1, strength)
				if m := cover.Missing(params, mma, ms.Sample, strength); len(m) > 0 {
					t.Fatalf("%s %s MMA=1: the covering sample misses %s", k.Name, dt, strings.Join(m, " "))
				}
				picked = append(picked, ms.Sample...)
			}
			if def := search.Candidate(ps.Defaults()); slices.IndexFunc(cons, func(con search.Constraint) bool { return con.Check(def) != nil }) < 0 {
				picked = append(picked, def)
			}
			seen := map[string]bool{}
			for _, c := range picked {
				if seen[c.Key()] {
					continue
				}
				seen[c.Key()] = true
				src, err := b.SourceFor(Metal, dt, c)
				if err != nil {
					t.Fatal(err)
				}
				ec := emuCand{k: k, b: b, dt: dt, c: c, name: fmt.Sprintf("%s %s %s", k.Name, dt, c.Key()), src: src}
				out = append(out, ec)
				if dt == kernels.BF16 {
					ec.bfloat = true
					ec.name += " (bfloat)"
					ec.src = withBFloat(t, src)
					out = append(out, ec)
				}
			}
		}
	}
	return out
}

// withBFloat defines __HAVE_BFLOAT__ in a bf16 source, as Metal 3.1 does.
func withBFloat(t *testing.T, src string) string {
	t.Helper()
	const open = "using namespace metal;\n"
	if !strings.Contains(src, "#if defined(__HAVE_BFLOAT__)") {
		t.Fatalf("a bf16 source without its bfloat branch:\n%s", src[:min(len(src), 400)])
	}
	return strings.Replace(src, open, open+"#define __HAVE_BFLOAT__ 1\n", 1)
}

// emuKernel binds a candidate's generated signature: its buffers and
// scalars in the order of Body.Args, then the two attributes.
func emuKernel(ec emuCand) mslemu.Kernel {
	var args []mslemu.Arg
	for i, a := range ec.b.Args {
		if a.Kind == Int || a.Kind == Float {
			args = append(args, mslemu.Ref(i))
		} else {
			args = append(args, mslemu.Buf(i))
		}
	}
	args = append(args, mslemu.Attr("thread_position_in_threadgroup"), mslemu.Attr("threadgroup_position_in_grid"))
	return mslemu.Kernel{Name: ec.name, Source: ec.src, Func: ec.b.Func, Args: args}
}

// emuLaunch is a candidate's launch on one problem: its inputs encoded in
// their element types (an absent optional input bound to the first, which
// the kernel never reads there), outputs poisoned with NaN (or filled
// with the family's Init), the scalars.
func emuLaunch(ec emuCand, kernel int, p *kernels.Problem) *mslemu.Launch {
	ops := p.Kernel.Inputs(p.Case)
	outs := p.Kernel.OutOperands(p.Case)
	scalars := ec.b.Scalars(p.Case, p.Kernel.Scalars)
	var bufs [][]byte
	nIn, nOut, nScalar := 0, 0, 0
	for _, a := range ec.b.Args {
		switch a.Kind {
		case In, Words:
			i := nIn
			if i >= len(p.Inputs) {
				i = 0
			}
			bufs = append(bufs, ops[i].Elem.In(p.DType).Encode(p.Inputs[i]))
			nIn++
		case Out:
			o := outs[min(nOut, len(outs)-1)]
			e := o.Elem.In(p.DType)
			var raw []byte
			if v := p.Kernel.Init; v != nil {
				raw = e.Fill(*v, o.Len)
			} else {
				for len(raw) < o.Len*e.Size() {
					raw = append(raw, e.Poison()...)
				}
			}
			bufs = append(bufs, raw)
			nOut++
		default:
			raw := make([]byte, 4)
			switch v := scalars[nScalar].(type) {
			case int32:
				binary.LittleEndian.PutUint32(raw, uint32(v))
			case float32:
				binary.LittleEndian.PutUint32(raw, math.Float32bits(v))
			default:
				panic(fmt.Sprintf("scalar %T", v))
			}
			bufs = append(bufs, raw)
			nScalar++
		}
	}
	g := ec.b.Geometry(p.Case.Shape, ec.c)
	return &mslemu.Launch{Kernel: kernel, Groups: [3]int{g.Grid[0], g.Grid[1], 1}, Group: [3]int{g.Threads, 1, 1}, Buffers: bufs}
}

// emuOutputs decodes a launch's outputs, in the order of the body's Out args.
func emuOutputs(ec emuCand, p *kernels.Problem, l *mslemu.Launch) []float32 {
	outs := p.Kernel.OutOperands(p.Case)
	var got []float32
	nOut := 0
	for i, a := range ec.b.Args {
		if a.Kind != Out {
			continue
		}
		o := outs[min(nOut, len(outs)-1)]
		got = append(got, o.Elem.In(p.DType).Decode(l.Buffers[i], o.Len)...)
		nOut++
	}
	return got
}

// emuOutcome is one candidate's result: nil, or why it failed on which shape.
type emuOutcome struct {
	err    error
	shared int // threadgroup bytes the emulation counted (the largest over the shapes)
}

// emulate runs candidates on their families' odd shapes in programs of
// per candidates, as many at once as there are CPUs, and verifies each
// output against the float64 reference with the candidate's tolerance.
func emulate(t *testing.T, cc string, cands []emuCand, per int) []emuOutcome {
	t.Helper()
	out := make([]emuOutcome, len(cands))
	type chunk struct{ lo, hi int }
	var chunks []chunk
	for lo := 0; lo < len(cands); lo += per {
		chunks = append(chunks, chunk{lo, min(lo+per, len(cands))})
	}
	work := make(chan chunk)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fatal []error
	for range min(runtime.NumCPU(), len(chunks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ch := range work {
				if err := emulateChunk(t, cc, cands[ch.lo:ch.hi], out[ch.lo:ch.hi]); err != nil {
					mu.Lock()
					fatal = append(fatal, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, ch := range chunks {
		work <- ch
	}
	close(work)
	wg.Wait()
	for _, err := range fatal {
		t.Error(err)
	}
	return out
}

func emulateChunk(t *testing.T, cc string, cands []emuCand, out []emuOutcome) error {
	ks := make([]mslemu.Kernel, len(cands))
	for i, ec := range cands {
		ks[i] = emuKernel(ec)
	}
	prog, err := mslemu.Build(context.Background(), cc, t.TempDir(), ks)
	if err != nil {
		for i := range out {
			out[i].err = fmt.Errorf("not built: %w", err)
		}
		return err
	}
	var ls []*mslemu.Launch
	var probs []*kernels.Problem
	var owner []int
	for i, ec := range cands {
		ps, _ := ec.k.Space("metal")
		shapes := 0
		for j, c := range ec.k.Odd {
			// As the tuner verifies: odd shapes the family's constraints
			// reject for the candidate (VEC dividing cols) are skipped.
			if ps != nil && ps.Check != nil && ps.Check(c.Shape, ec.c) != nil {
				continue
			}
			shapes++
			p, err := kernels.NewProblem(ec.k, ec.dt, c, rand.New(rand.NewPCG(uint64(j), 7)))
			if err != nil {
				return err
			}
			probs = append(probs, p)
			ls = append(ls, emuLaunch(ec, i, p))
			owner = append(owner, i)
		}
		if shapes == 0 {
			out[i].err = fmt.Errorf("no odd shape satisfies its constraints")
		}
	}
	res, err := prog.Run(context.Background(), ls)
	if err != nil {
		for i := range out {
			out[i].err = fmt.Errorf("not run: %w", err)
		}
		return err
	}
	for j, r := range res {
		o := &out[owner[j]]
		o.shared = max(o.shared, r.Shared)
		if o.err != nil {
			continue
		}
		if r.Err != nil {
			o.err = fmt.Errorf("on %s: %w", probs[j].Case, r.Err)
			continue
		}
		ec := cands[owner[j]]
		if err := probs[j].VerifyFor(emuOutputs(ec, probs[j], ls[j]), ec.c); err != nil {
			o.err = err
		}
	}
	return nil
}

// TestMSLEmulation runs the generated MSL of a covering sample of every
// family's Metal candidates, f32, f16 and bf16 (both of its branches), on
// the CPU (internal/mslemu), on each family's odd shapes with random
// inputs and NaN-poisoned outputs, and compares every output with the
// float64 reference; with KTDEV_FULL a sample of every pair of values. The
// threadgroup memory the emulation counts is what Body.Shared says (up to
// the 16-byte alignment of each array), since that is what the Metal
// limits are held to.
func TestMSLEmulation(t *testing.T) {
	t.Parallel() // the package's long tests share the machine's cores (make test's time)
	cc := mslcheck.Require(t)
	start := time.Now()
	cands := emuCands(t, cover.Full())
	res := emulate(t, cc, cands, 24)
	computed, mma := 0, 0
	families := map[string]bool{}
	perDType := map[string]int{}
	for i, ec := range cands {
		if err := res[i].err; err != nil {
			t.Errorf("%s: %v", ec.name, err)
			continue
		}
		want := ec.b.Shared(Metal, ec.dt, ec.c)
		if ec.bfloat && ec.c["MMA"] == 1 {
			// bfloat tiles take half the float tiles' budget.
			f := metalFragmentOf[kernels.BF16]
			f.SmemBytes = 2
			if ec.k.Name == "lora" {
				ring, static := loraMMAShared(f, ec.c)
				want = ring + static
			} else {
				want = gemmMMATiles(f, ec.c, ec.b.Defines(ec.c)["A_TRANS"]) + gemmMMAScratch(f, ec.c)
			}
		}
		if got := res[i].shared; got < want || got > want+32 {
			t.Errorf("%s: %d bytes of threadgroup memory declared; Body.Shared says %d", ec.name, got, want)
		}
		computed++
		families[ec.k.Name] = true
		perDType[ec.k.Name+" "+string(ec.dt)]++
		if ec.c["MMA"] == 1 {
			mma++
		}
	}
	what := "a covering sample (every value of every parameter per family and dtype, again among MMA=1; make test)"
	if cover.Full() {
		what = "a covering sample of every pair of parameter values (make test-full)"
	}
	line := fmt.Sprintf("MSL emulation: %d candidates computed, %d of them matrix-unit; %s, %d families, f32, f16 and bf16 (bfloat and ushort storage), verified on the odd shapes; %s",
		computed, mma, what, len(families), time.Since(start).Round(100*time.Millisecond))
	t.Log(line)
	for _, k := range kernels.All() {
		for _, dt := range kernels.DTypes {
			if perDType[k.Name+" "+string(dt)] == 0 {
				t.Errorf("%s %s: no candidate computed", k.Name, dt)
			}
		}
	}
	if t.Failed() {
		return
	}
	if err := mslcheck.Summary(line); err != nil {
		t.Fatal(err)
	}
	if mma == 0 {
		t.Fatal("no matrix-unit candidate was computed")
	}
}

// The emulation has teeth: each mutant of a generated source, a fault the
// syntax checks cannot see, fails verification on the odd shapes.
func TestMSLEmulationCatchesMutants(t *testing.T) {
	t.Parallel() // the package's long tests share the machine's cores (make test's time)
	cc := mslcheck.Require(t)
	type m = map[string]int
	mmaAV := m{"BM": 32, "BN": 32, "BK": 16, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 2, "STAGES": 1, "TF32": 0}
	mutants := []struct {
		name, family string
		dt           kernels.DType
		c            m
		old, new     string
	}{
		{"a shuffle reads the wrong lane", "softmax", kernels.F32, m{"TPR": 256, "RPB": 1, "UNROLL": 1, "VEC": 1},
			"simd_shuffle_xor(v, (ushort)o)", "simd_shuffle_xor(v, (ushort)(o ^ 1))"},
		{"a shuffle reads the wrong lane", "gemv_nt", kernels.F16, m{"TG": 64, "TPR": 16, "UNROLL": 2, "VEC": 2},
			// (o + 1 would be no mutant within a SIMD-group of 16: masks 9, 5,
			// 3, 2 span every lane, so the butterfly still sums them all.)
			"simd_shuffle_xor(v, (ushort)o)", "simd_shuffle_xor(v, (ushort)(o >> 1))"},
		{"no barrier before the partials are read", "rmsnorm", kernels.F32, m{"TPR": 128, "RPB": 2, "UNROLL": 1, "VEC": 1},
			"if ((lid & 31u) == 0u) scratch[sg] = v; \\\n  threadgroup_barrier(mem_flags::mem_threadgroup); \\\n", "if ((lid & 31u) == 0u) scratch[sg] = v; \\\n"},
		{"no barrier between the tile copies and the matrix loads", "gemm_av", kernels.F32, mmaAV,
			"COPY_WAIT(0);\n    BARRIER();\n", "COPY_WAIT(0);\n"},
		{"no barrier between the tile copies and the matrix loads", "gemm_av", kernels.F16, mmaAV,
			"COPY_WAIT(0);\n    BARRIER();\n", "COPY_WAIT(0);\n"},
		{"no SIMD-group barrier after the accumulator's store", "gemm_av", kernels.F32, mmaAV,
			"simdgroup_store(c, s, 8);\n  simdgroup_barrier(mem_flags::mem_threadgroup);\n", "simdgroup_store(c, s, 8);\n"},
		{"no barrier after the SIMT tiles are used", "gemm_at_b", kernels.BF16, m{"BM": 32, "BN": 32, "BK": 8, "TM": 2, "TN": 2, "PAD": 1, "MMA": 0, "WM": 1, "WN": 1, "STAGES": 1, "TF32": 0},
			"#if STAGES == 1\n    BARRIER();\n#endif\n", ""},
		{"the transposed load turned off", "gemm_at_b", kernels.F32, mmaAV,
			"ulong2(0, 0), true)", "ulong2(0, 0), false)"},
		{"the transposed load turned off", "gemm_at_b", kernels.F16, m{"BM": 64, "BN": 32, "BK": 32, "TM": 1, "TN": 1, "PAD": 0, "MMA": 1, "WM": 2, "WN": 1, "STAGES": 2, "TF32": 0},
			"ulong2(0, 0), true)", "ulong2(0, 0), false)"},
	}
	var cands []emuCand
	for _, mu := range mutants {
		k, err := kernels.Get(mu.family)
		if err != nil {
			t.Fatal(err)
		}
		b := bodies[mu.family]
		if err := b.Buildable(Metal, mu.dt, mu.c); err != nil {
			t.Fatalf("%s: %v", mu.name, err)
		}
		src, err := b.SourceFor(Metal, mu.dt, mu.c)
		if err != nil {
			t.Fatal(err)
		}
		// The unbroken source first: it must pass, so that the mutant's
		// failure is the mutation's.
		cands = append(cands, emuCand{k: k, b: b, dt: mu.dt, c: mu.c, name: fmt.Sprintf("%s %s %v", mu.family, mu.dt, mu.c), src: src})
		broken := strings.ReplaceAll(src, mu.old, mu.new)
		if broken == src {
			t.Fatalf("%s: %s %s has no %q", mu.name, mu.family, mu.dt, mu.old)
		}
		cands = append(cands, emuCand{k: k, b: b, dt: mu.dt, c: mu.c, name: fmt.Sprintf("%s %s (%s)", mu.family, mu.dt, mu.name), src: broken})
	}
	res := emulate(t, cc, cands, len(cands))
	caught := 0
	for i, ec := range cands {
		err := res[i].err
		switch {
		case i%2 == 0 && err != nil:
			t.Errorf("%s, unbroken: %v", ec.name, err)
		case i%2 == 1 && err == nil:
			t.Errorf("%s: passed verification", ec.name)
		case i%2 == 1:
			caught++
			t.Logf("%s: caught: %v", ec.name, err)
		}
	}
	t.Logf("%d of %d mutants caught", caught, len(mutants))
}
