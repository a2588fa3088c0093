package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// fakeKerntune stands in for kerntune in scripts/mac-first-run.sh: it logs
// each call with the GOTRACEBACK it got, refuses two candidates for
// register pressure when shader validation is on (as an instrumented
// pipeline may) and none when it is off, and answers bench with a JSON
// row per shape.
const fakeKerntune = `#!/usr/bin/env bash
echo "$1 GOTRACEBACK=${GOTRACEBACK:-}" >>"$FAKE_CALLS"
case $1 in
version) echo '{"version": "test"}' ;;
devices) echo "metal:Apple M2:10c" ;;
verify)
	if [ "${MTL_SHADER_VALIDATION:-}" = 1 ]; then
		echo "softmax    f16  3/5 candidates passed (40 valid) in 0.1s"
		echo "        2 × build: needs 1024 threads per threadgroup but its pipeline allows 512 (register pressure)  (e.g. ROWS=1,TG=1024)"
		echo "verified 5 candidates on metal:Apple M2:10c: 3 passed, 2 failed"
		exit 1
	fi
	echo "verified 5 candidates on metal:Apple M2:10c: 5 passed, 0 failed"
	;;
bench)
	out=""
	shapes=()
	while [ $# -gt 0 ]; do
		case $1 in
		--json-out) out=$2; shift ;;
		--shape) shapes+=("$2"); shift ;;
		esac
		shift
	done
	rows=""
	for s in "${shapes[@]}"; do rows="$rows${rows:+,}{\"shape\": \"$s\", \"tuned_us\": 12.5}"; done
	[ -z "$out" ] || echo "{\"rows\": [$rows]}" >"$out"
	echo "bench ${shapes[*]}"
	;;
esac
exit 0
`

// mlxStub is just enough of mlx.core for the script's timing of
// mx.quantized_matmul.
const mlxStub = `__version__ = "0.0-stub"
float16 = "float16"
class _A:
    def astype(self, t): return self
    def __getitem__(self, i): return self
class random:
    @staticmethod
    def normal(shape): return _A()
def quantize(w, group_size, bits):
    assert (group_size, bits) == (64, 4)
    return _A(), _A(), _A()
def quantized_matmul(x, w, scales, biases, transpose, group_size, bits):
    assert transpose and (group_size, bits) == (64, 4)
    return _A()
def eval(*args): pass
`

// The first-run script: kerntune runs with GOTRACEBACK=crash (a Go program
// killed by a fatal signal then aborts, and macOS writes a crash report);
// verify's register-pressure refusals under shader validation are not
// counted as failures, and verify runs again without it; 4-bit qgemv is
// benched on Qwen2-0.5B's shapes, and MLX's quantized_matmul is timed
// beside it where MLX imports, and skipped where it does not.
func TestMacFirstRunScript(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "mac-first-run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, withMLX := range []bool{true, false} {
		name := "without MLX"
		if withMLX {
			name = "with MLX"
		}
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			bin := filepath.Join(tmp, "bin")
			mlx := filepath.Join(tmp, "py", "mlx")
			for _, d := range []string{bin, mlx} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			kt := filepath.Join(bin, "kerntune")
			files := map[string]string{kt: fakeKerntune, filepath.Join(bin, "xcode-select"): "#!/bin/sh\nexit 0\n"}
			if withMLX {
				files[filepath.Join(mlx, "__init__.py")] = ""
				files[filepath.Join(mlx, "core.py")] = mlxStub
			}
			for p, text := range files {
				if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			calls := filepath.Join(tmp, "calls")
			out := filepath.Join(tmp, "run")
			cmd := exec.Command(bash, script, out)
			cmd.Dir = tmp
			cmd.Env = append(os.Environ(), "KERNTUNE="+kt, "FAKE_CALLS="+calls, "PYTHON="+python,
				"PYTHONPATH="+filepath.Join(tmp, "py"), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOTRACEBACK=")
			log, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the script failed (%v): a step failed for refusals shader validation caused?\n%s", err, log)
			}
			summary := testutil.ReadFile(t, filepath.Join(out, "summary.txt"))
			for _, want := range []string{"2 register-pressure refusals not counted", "verify (shader validation off)", "failed steps: 0", "bench qgemv (4-bit)"} {
				if !strings.Contains(string(summary), want) {
					t.Errorf("summary lacks %q:\n%s", want, summary)
				}
			}
			got := testutil.ReadFile(t, calls)
			for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
				if !strings.HasSuffix(line, "GOTRACEBACK=crash") {
					t.Errorf("kerntune called without GOTRACEBACK=crash: %s", line)
				}
			}
			bench := testutil.ReadFile(t, filepath.Join(out, "bench-qgemv.txt"))
			if want := "bench 1x896x896x4x64 1x4864x896x4x64 1x9728x896x4x64 1x151936x896x4x64"; !strings.Contains(string(bench), want) {
				t.Errorf("qgemv bench output %q, want %q", bench, want)
			}
			mlxOut, err := os.ReadFile(filepath.Join(out, "mlx-qgemv.txt"))
			if !withMLX {
				if err == nil || !strings.Contains(string(summary), "no MLX") {
					t.Errorf("MLX timed without MLX, or the summary does not say it was skipped:\n%s", summary)
				}
				return
			}
			if err != nil {
				t.Fatalf("no MLX timing: %v\n%s", err, log)
			}
			for _, shape := range []string{"1x896x896x4x64", "1x4864x896x4x64", "1x9728x896x4x64", "1x151936x896x4x64"} {
				found := false
				for _, line := range strings.Split(string(mlxOut), "\n") {
					f := strings.Fields(line)
					found = found || (len(f) == 4 && f[0] == shape && f[1] == "12.50")
				}
				if !found {
					t.Errorf("no row for %s with kerntune's 12.50 µs beside MLX's:\n%s", shape, mlxOut)
				}
			}
		})
	}
}
