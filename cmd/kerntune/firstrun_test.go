package main

import (
	"errors"
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
// row per shape; it notes a tune run under the validation layers in an
// isolated worker.
const fakeKerntune = `#!/usr/bin/env bash
echo "$1 GOTRACEBACK=${GOTRACEBACK:-}" >>"$FAKE_CALLS"
case $1 in
tune)
	if [ "${MTL_DEBUG_LAYER:-}" = 1 ] && [ "${MTL_DEBUG_LAYER_ERROR_MODE:-}" = nslog ] && [[ " $* " == *" --isolate "* ]]; then
		echo "tune under validation, isolated" >>"$FAKE_CALLS.tune"
	fi
	;;
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
def pad(a, widths): return a
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
			for _, want := range []string{"2 register-pressure refusals not counted", "verify (shader validation off)", "verify (plain)", "tune (validation on, isolated)", "Metal validation messages in verify-sample.log and tune-validation.log: 0", "failed steps: 0", "bench qgemv (4-bit)"} {
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
			if tuned := testutil.ReadFile(t, calls+".tune"); !strings.Contains(string(tuned), "tune under validation, isolated") {
				t.Errorf("no tune ran under the validation layers in an isolated worker: %q", tuned)
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
			for _, want := range []string{"chain of 32", "host-inclusive"} {
				if !strings.Contains(string(mlxOut), want) {
					t.Errorf("MLX timing does not say %q:\n%s", want, mlxOut)
				}
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

// A quarantined binary (downloaded with a browser) is refused before any
// step, with the command that lifts the quarantine.
func TestMacFirstRunQuarantine(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "mac-first-run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	kt := filepath.Join(bin, "kerntune")
	for p, text := range map[string]string{kt: fakeKerntune, filepath.Join(bin, "xattr"): "#!/bin/sh\necho '0081;0;Safari;'\n"} {
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bash, script, filepath.Join(tmp, "run"))
	cmd.Env = append(os.Environ(), "KERNTUNE="+kt, "FAKE_CALLS="+filepath.Join(tmp, "calls"), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "xattr -d com.apple.quarantine "+kt) {
		t.Errorf("a quarantined binary: %v, output:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "calls")); err == nil {
		t.Error("kerntune ran although it is quarantined")
	}
}
