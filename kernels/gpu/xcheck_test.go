package gpu

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
)

// scripts/gemm_xcheck.py rebuilds candidate sources from GemmTemplate and
// enumerates the CUDA MMA candidates with its own copy of the backend's
// rules: both must agree with this package, or its H100 numbers would be
// of other kernels than kerntune's.
func TestGemmXcheckMatchesGo(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	for _, dt := range kernels.DTypes {
		tpl, err := GemmTemplate(dt)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "t"+strings.TrimPrefix(string(dt), "f")+".cu"), []byte(tpl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type tc struct {
		Family string         `json:"family"`
		DType  string         `json:"dtype"`
		Params map[string]int `json:"params"`
	}
	cases := []tc{
		{"gemm_av", "f16", map[string]int{"MMA": 1, "BM": 128, "BN": 256, "BK": 32, "WM": 2, "WN": 4, "STAGES": 4}},
		{"gemm_at_b", "f32", map[string]int{"MMA": 1, "BM": 64, "BN": 128, "BK": 16, "WM": 2, "WN": 2, "STAGES": 3, "TF32": 1}},
		{"gemm_av", "f32", map[string]int{"BM": 128, "BN": 64, "BK": 8, "TM": 8, "TN": 4, "PAD": 4, "STAGES": 2}},
		{"gemm_at_b", "f16", map[string]int{"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PAD": 1, "STAGES": 1}},
	}
	in, _ := json.Marshal(cases)
	script := `
import sys, json
sys.argv = ['gemm_xcheck.py', sys.argv[1]]
sys.path.insert(0, '` + filepath.Join("..", "..", "scripts") + `')
import gemm_xcheck as h
cases = json.loads(sys.stdin.read())
out = {'sources': [h.src(c['params'], c['dtype'], 1 if c['family'] == 'gemm_at_b' else 0) for c in cases],
       'counts': {'%s/%d' % (dt, tr): len(h.mma_cands(dt, tr)) for dt in ('f16', 'f32') for tr in (0, 1)}}
print(json.dumps(out))
`
	cmd := exec.Command(py, "-c", script, dir)
	cmd.Stdin = strings.NewReader(string(in))
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, raw)
	}
	var got struct {
		Sources []string       `json:"sources"`
		Counts  map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		b, _ := Get(c.Family)
		p := map[string]int{"TM": 1, "TN": 1, "PAD": 0, "MMA": 0, "WM": 1, "WN": 1, "STAGES": 1, "TF32": 0}
		for k, v := range c.Params {
			p[k] = v
		}
		want, err := b.SourceFor(CUDA, kernels.DType(c.DType), p)
		if err != nil {
			t.Fatal(err)
		}
		// The script omits the header comment line.
		want = want[strings.Index(want, "\n")+1:]
		if got.Sources[i] != want {
			t.Errorf("%s %s %v: the script's source differs from SourceFor's", c.Family, c.DType, c.Params)
		}
	}
	// Its MMA candidates: the CUDA-buildable ones within 227 KiB of shared
	// memory, in the dtypes it sweeps (f16 and f32; bf16 is tuned through
	// kerntune itself, scripts/gpu-bf16.sh).
	k, _ := kernels.Get("gemm_av")
	for _, dt := range []kernels.DType{kernels.F16, kernels.F32} {
		for tr, fam := range []string{"gemm_av", "gemm_at_b"} {
			b, _ := Get(fam)
			n := 0
			for _, c := range spaceOf(t, k) {
				if c["MMA"] == 1 && b.Buildable(CUDA, dt, c) == nil && b.Shared(CUDA, dt, c) <= 232448 {
					n++
				}
			}
			key := string(dt) + "/" + string(rune('0'+tr))
			if got.Counts[key] != n {
				t.Errorf("%s %s: the script enumerates %d MMA candidates, the CUDA backend %d", fam, dt, got.Counts[key], n)
			}
		}
	}
}
