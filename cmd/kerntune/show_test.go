package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params"
)

// TestShowParamsFile: show prints FILE, else $KERNTUNE_PARAMS, else
// ./hardware_params.json, like get and bench.
func TestShowParamsFile(t *testing.T) {
	path := getEnv(t) // cpu:a and cpu:b
	other := testutil.WriteFile(t, t.TempDir(), "other.json", strings.ReplaceAll(getFile, `"cpu:`, `"cpu:z`))
	cwd := t.TempDir()
	testutil.WriteFile(t, cwd, params.DefaultFileName, strings.ReplaceAll(getFile, `"cpu:`, `"cpu:w`))
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
