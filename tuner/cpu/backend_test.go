package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
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
		sp, ok := k.Space("cpu")
		if !ok {
			t.Fatalf("%s has no cpu space", k.Name)
		}
		for _, dt := range kernels.DTypes {
			prog, err := b.Build(k, dt, search.Candidate(sp.Defaults()))
			if err != nil {
				t.Fatalf("%s %s: %v", k.Name, dt, err)
			}
			base, name, err := b.Baseline(k, dt)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range k.Odd {
				p, err := kernels.NewProblem(k, dt, c, rng)
				if err != nil {
					t.Fatal(err)
				}
				inst, err := b.Load(p, 3)
				if err != nil {
					t.Fatal(err)
				}
				out, err := prog.Output(inst)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Verify(out); err != nil {
					t.Errorf("%s %s %s: %v", k.Name, dt, c, err)
				}
				if base != nil {
					out, err := base.Output(inst)
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Verify(out); err != nil {
						t.Errorf("baseline %s for %s %s %s: %v", name, k.Name, dt, c, err)
					}
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
	k, _ := kernels.Get("rmsnorm")
	p, err := kernels.NewProblem(k, kernels.F32, kernels.Case{Shape: []int{2, 151936}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := b.Load(p, 1)
	for _, u := range []int{1, 2, 4, 8} {
		prog, _ := b.Build(k, kernels.F32, search.Candidate{"ROWS": 1, "UNROLL": u, "THREADS": 2})
		out, err := prog.Output(inst)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Verify(out); err != nil {
			t.Errorf("UNROLL=%d: %v", u, err)
		}
	}
}
