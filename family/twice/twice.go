// Package twice is the example of a kernel family that lives in one
// folder: y = 2·x over n elements. Its description is twice.json (read by
// params/families and the Python loader through package family); this file
// registers the rest from init: the catalog entry with its float64
// reference (kernels.AddBuiltin), the GPU body every GPU backend generates
// its source from (gpu.AddBuiltin), the CPU kernel (cpu.AddFamily) and the
// naive implementation the mutation tests break (kernels.AddMutant).
// family/all imports it. A new family is a copy of this folder under its
// own name and one import line in family/all (scripts/trial_family.sh).
package twice

import (
	"sync"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/cpu"
)

// Name is the family's name, its folder's and its description's.
const Name = "twice"

func init() {
	kernels.AddBuiltin(&kernels.Kernel{
		Family:      kernels.BuiltinFamily(Name),
		Example:     true,
		Workload:    []kernels.Case{{Shape: []int{4096}}, {Shape: []int{1 << 20}}},
		Odd:         []kernels.Case{{Shape: []int{1}}, {Shape: []int{1001}}},
		MemoryBound: true,
		Inputs:      func(c kernels.Case) []kernels.Operand { return []kernels.Operand{{Name: "x", Len: c.Shape[0]}} },
		OutLen:      func(s []int) int { return s[0] },
		Reference: func(c kernels.Case, in [][]float32) []float64 {
			out := make([]float64, c.Shape[0])
			for i := range out {
				out[i] = 2 * float64(in[0][i])
			}
			return out
		},
		Flops: func(c kernels.Case) float64 { return float64(c.Shape[0]) },
	})
	// PER consecutive elements per thread.
	gpu.AddBuiltin(&gpu.Body{
		Family: Name, Func: "kt_twice",
		Args: []gpu.Arg{{Name: "x", Kind: gpu.In}, {Name: "y", Kind: gpu.Out}, {Name: "n", Kind: gpu.Int}},
		Source: `
  const int base = (GROUP_X * NTHREADS + LID) * PER;
  for (int u = 0; u < PER; ++u) {
    if (base + u < n) STORE(y, base + u, 2.0f * LOAD(x, base + u));
  }
`,
		Defines:     func(p map[string]int) map[string]int { return map[string]int{"NTHREADS": p["TG"]} },
		SharedBytes: func(map[string]int) int { return 0 },
		Geometry: func(shape []int, p map[string]int) gpu.Launch {
			per := p["TG"] * p["PER"]
			return gpu.Launch{Grid: [2]int{(shape[0] + per - 1) / per, 1}, Threads: p["TG"]}
		},
		Scalars: func(c kernels.Case, _ map[string]float64) []any { return []any{int32(c.Shape[0])} },
	})
	cpu.AddFamily(Name, func(c search.Candidate) (cpu.Kernels, error) {
		return cpu.Kernels{F32: func(p *kernels.Problem, in [][]float32, out []float32) {
			double(p.Case.Shape[0], c["CHUNK"], c["THREADS"], in[0], out)
		}}, nil
	})
	kernels.AddMutant(Name, mutant)
}

// double writes out[i] = 2·x[i] in chunks of chunk elements on threads
// goroutines.
func double(n, chunk, threads int, x, out []float32) {
	next := make(chan int, (n+chunk-1)/chunk)
	for lo := 0; lo < n; lo += chunk {
		next <- lo
	}
	close(next)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range next {
				for i := lo; i < min(lo+chunk, n); i++ {
					out[i] = 2 * x[i]
				}
			}
		}()
	}
	wg.Wait()
}

// mutant is the naive loop with the mutations the description lists (the
// test writes past the end itself).
func mutant(p *kernels.Problem, in [][]float32, out []float32, mutation string) {
	n := p.Case.Shape[0]
	end, shift := n, 0
	switch mutation {
	case "tail off by one":
		end = n - 1
	case "reads past the end":
		shift = 1
	}
	for i := 0; i < end; i++ {
		out[i] = 2 * kernels.ReadPast(in[0], i+shift)
	}
}
