#!/usr/bin/env bash
# Adds a trial family, scale (y = 2·x over n elements), to a scratch copy of
# the tree from three new files and nothing else:
#
#   params/families/scale.json   its description: dims, classes, parameters, constraints
#   kernels/gpu/scale.go         its GPU body and its catalog entry (workload, operands, reference)
#   tuner/cpu/scale.go           its CPU kernel
#
# and checks that the tree builds, that the tests holding every layer to the
# families pass, that `kerntune kernels` lists it, that it tunes on the CPU,
# and that the Go loader (`kerntune get`) and the Python loader resolve the
# tuned entry alike. Run from anywhere: scripts/trial_family.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	if [ -e "$f" ] || [ -L "$f" ]; then cp -P --parents "$f" "$tree/"; fi
done)
cd "$tree"
git init -q && git add -A && git -c user.name=trial -c user.email=trial@invalid commit -qm base

cat > params/families/scale.json <<'EOF'
{
  "name": "scale",
  "doc": "y = 2·x over n elements (a trial family)",
  "dims": ["n"],
  "classes": [
    {"name": "small", "rule": "n ≤ 65536", "when": "n <= 65536"},
    {"name": "large", "rule": "otherwise"}
  ],
  "mutants": ["tail off by one", "reads past the end", "writes past the end"],
  "spaces": {
    "cpu": {
      "params": [
        {"name": "CHUNK", "values": [1024, 4096, 16384], "default": 4096, "doc": "elements per task"},
        {"name": "THREADS", "values": [1, 2, 4], "default": 1, "doc": "goroutines sharing the work"}
      ]
    },
    "gpu": {
      "params": [
        {"name": "TG", "values": [32, 64, 128, 256], "default": 128, "doc": "threads per threadgroup"},
        {"name": "PER", "values": [1, 2, 4], "default": 1, "doc": "elements per thread"}
      ],
      "constraints": [
        {"require": "TG * PER <= 512", "error": "TG·PER = {TG * PER} elements per threadgroup; must be at most 512"}
      ]
    }
  }
}
EOF

cat > kernels/gpu/scale.go <<'EOF'
package gpu

import "github.com/kerntune/kerntune/kernels"

// scale: y = 2·x, PER consecutive elements per thread.
func init() {
	kernels.AddBuiltin(&kernels.Kernel{
		Family:      kernels.BuiltinFamily("scale"),
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
	builtinBody(&Body{
		Family: "scale", Func: "kt_scale",
		Args: []Arg{{"x", In}, {"y", Out}, {"n", Int}},
		Source: `
  const int base = (GROUP_X * NTHREADS + LID) * PER;
  for (int u = 0; u < PER; ++u) {
    if (base + u < n) STORE(y, base + u, 2.0f * LOAD(x, base + u));
  }
`,
		Defines:     func(p map[string]int) map[string]int { return map[string]int{"NTHREADS": p["TG"]} },
		SharedBytes: func(map[string]int) int { return 0 },
		Geometry: func(shape []int, p map[string]int) Launch {
			return Launch{Grid: [2]int{ceilDiv(shape[0], p["TG"]*p["PER"]), 1}, Threads: p["TG"]}
		},
		Scalars: func(c kernels.Case, _ map[string]float64) []any { return []any{int32(c.Shape[0])} },
	})
}
EOF

cat > tuner/cpu/scale.go <<'EOF'
package cpu

import (
	"sync"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
)

// scale: y = 2·x in chunks of CHUNK elements on THREADS goroutines.
func init() {
	families.Add("scale", family{build: func(c search.Candidate) (*program, error) {
		chunk, threads := c["CHUNK"], c["THREADS"]
		return &program{f32: func(p *kernels.Problem, in [][]float32, out []float32) {
			n := p.Case.Shape[0]
			var wg sync.WaitGroup
			next := make(chan int, (n+chunk-1)/chunk)
			for lo := 0; lo < n; lo += chunk {
				next <- lo
			}
			close(next)
			for t := 0; t < threads; t++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for lo := range next {
						for i := lo; i < min(lo+chunk, n); i++ {
							out[i] = 2 * in[0][i]
						}
					}
				}()
			}
			wg.Wait()
		}}, nil
	}})
}
EOF

changed=$(git status --porcelain | wc -l)
echo "files added or changed: $changed"
git status --porcelain
[ "$changed" -le 3 ] || { echo "FAIL: more than 3 files" >&2; exit 1; }

go build -o "$tmp/kerntune" ./cmd/kerntune
go vet ./params ./kernels/... ./tuner/cpu
go test -count=1 ./params -run 'TestFamilyConformance|TestPythonBuiltinFamilies|TestBuiltinDefaultsValid'
go test -count=1 ./kernels/gpu -run 'TestEveryFamilyComplete|TestEveryCandidateGeneratesFromOneBody|TestGeometryCoversOutput'
go test -count=1 ./tuner/cpu -run 'TestFamiliesRegistered|TestBaselineByFamily'

"$tmp/kerntune" kernels | grep "^scale "
hp=$tmp/hardware_params.json
"$tmp/kerntune" tune --backend cpu --kernel scale --shape 100000 --budget 6e --out "$hp" -q
go_json=$("$tmp/kerntune" get --kernel scale --shape 100000 --params "$hp" --json)
echo "Go loader:     $go_json"
py_json=$(PYTHONPATH="$tree/python" python3 -c '
import json, sys, kerntune_params as kp
r = kp.load(path=sys.argv[1]).resolve("scale", "f32", (100000,))
print(json.dumps({n: [r[n], r.params[n].source] for n in ("CHUNK", "THREADS")}))' "$hp")
echo "Python loader: $py_json"
python3 - "$go_json" "$py_json" <<'EOF'
import json, sys
g, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert set(p) == set(g["params"]), (p, g["params"])
for name, (value, source) in p.items():
    assert source.startswith("file:"), f"{name} resolved from {source}, not the tuned file"
    want = {"value": value, "source": source}
    assert g["params"][name] == want, f"{name}: Go {g['params'][name]}, Python {want}"
print("trial family scale: 3 files; built, listed, tuned on the CPU, resolved alike by both loaders")
EOF
