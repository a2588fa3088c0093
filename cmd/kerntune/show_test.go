package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/paramfile"
)

// TestShowParamsFile: show prints FILE, else $KERNTUNE_PARAMS, else
// ./hardware_params.json, like get and bench.
func TestShowParamsFile(t *testing.T) {
	path := getEnv(t) // cpu:a and cpu:b
	other := testutil.WriteFile(t, t.TempDir(), "other.json", strings.ReplaceAll(getFile, `"cpu:`, `"cpu:z`))
	cwd := t.TempDir()
	testutil.WriteFile(t, cwd, paramfile.DefaultFileName, strings.ReplaceAll(getFile, `"cpu:`, `"cpu:w`))
	t.Chdir(cwd)
	missing := filepath.Join(t.TempDir(), "none.json")
	for _, tt := range []struct {
		name    string
		env     string // $KERNTUNE_PARAMS
		args    []string
		code    int
		want    string // in stdout, or stderr for an error
		wantNot string
	}{
		{"KERNTUNE_PARAMS without FILE", path, nil, 0, "cpu:a  (cpu, family amd64", "cpu:wa"},
		{"FILE beats KERNTUNE_PARAMS", path, []string{other}, 0, "cpu:za  (cpu", "cpu:a  ("},
		{"neither: the working directory's file", "", nil, 0, "cpu:wa  (cpu", "cpu:a  ("},
		{"KERNTUNE_PARAMS naming a missing file", missing, nil, exitUsage, missing + ": no such file", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KERNTUNE_PARAMS", tt.env)
			code, out, errOut := runIn(append([]string{"show"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			got := out
			if tt.code != 0 {
				got = errOut
			}
			if !strings.Contains(got, tt.want) || tt.wantNot != "" && strings.Contains(got, tt.wantNot) {
				t.Errorf("output lacks %q or has %q:\n%s", tt.want, tt.wantNot, got)
			}
		})
	}
}

// A class entry whose shapes route otherwise than its use says which.
func TestShowShapeUse(t *testing.T) {
	file := `{"schema_version": 1, "devices": {"cuda:X": {"backend": "cuda", "name": "X", "family": "sm_90", "kernels": {"lora": {"f16/decode_r16": {
	  "params": {"BM": 4}, "median_us": 151, "baseline": {"name": "cublas", "median_us": 142.9, "shape_median_us": [15, 16.3]},
	  "shapes": [[4, 896, 896, 16], [16, 4864, 896, 16]], "use": "baseline", "shape_use": ["tuned", "baseline"]}}}}}}`
	path := testutil.WriteFile(t, t.TempDir(), "hp.json", file)
	code, out, errOut := runIn("show", path)
	if code != 0 || !strings.Contains(out, "baseline; tuned at 4x896x896x16") || strings.Contains(out, "at 16x4864x896x16") {
		t.Errorf("exit %d; want the USE cell \"baseline; tuned at 4x896x896x16\" alone:\n%s\n%s", code, out, errOut)
	}
}

// An entry with parameters and nothing measured, in a device without a
// tuning date, shows dashes, not zeros.
func TestShowSparseEntry(t *testing.T) {
	path := testutil.WriteFile(t, t.TempDir(), "sparse.json", `{"schema_version": 1, "devices": {"cpu:s": {"backend": "cpu", "name": "S", "family": "amd64",
		"kernels": {"softmax": {"f32/all": {"params": {}}}}}}}`)
	code, out, errOut := runIn("show", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "0.00") || !strings.Contains(out, "tuned -)") {
		t.Errorf("zeros or an empty date for what was not recorded:\n%s", out)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "f32/all") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 6 || f[2] != "-" || f[3] != "-" || f[4] != "-" {
		t.Errorf("row %q: want - for params, median and IQR", row)
	}
}
