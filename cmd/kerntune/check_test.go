package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSpecCLI(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"name": "x", "dims": ["n"], "source": {"body": "x"}, "buffers": [{"name": "y", "io": "out", "length": "n"}],
	  "params": [], "launch": {"threads": "32", "grid": ["cdiv(n, BN)"]}, "shapes": [[10]], "reference": {"expr": "0"}}`), 0o644)
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"check", "--spec", "../../examples/m1_gemv.json", "--spec", "../../examples/swiglu.json", "--backend", "none"}, 0,
			[]string{"kernel m1_gemv", "implements gemv_nt", "class largeK_smallN", "kernel swiglu", "reference expression", "sources generated"}},
		{[]string{"check", "--spec", bad, "--backend", "none"}, 2, []string{bad, "launch.grid[0]", `"cdiv(n, BN)"`, "unknown name BN"}},
		// Every GPU backend is named where the spec's backends are listed, OpenCL included.
		{[]string{"check", "--spec", "../../examples/swiglu.json", "--backend", "cpu"}, 2, []string{"cpu backend cannot run them", "use cuda, metal, opencl, or none"}},
		{[]string{"tune", "--spec", "../../examples/swiglu.json", "--backend", "cpu", "--out", filepath.Join(t.TempDir(), "p.json")}, 2, []string{"cpu backend cannot run them", "use --backend cuda, metal or opencl"}},
		{[]string{"check", "--spec", "../../examples/swiglu.json", "--backend", "vulkan"}, 2, []string{`unknown backend "vulkan"`, "opencl"}},
		{[]string{"import-variants", "../../examples/variants_enhanced.json", "--name", "imported", "--only-listed"}, 0, []string{`"BN"`, "5 disabled variants", "supports.smallK"}},
	}
	for _, tt := range tests {
		code, out := runCLI(t, tt.args...)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d\n%s", tt.args, code, tt.code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}
