package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params"
)

// TestShowParamsFile: show prints FILE, else $KERNTUNE_PARAMS, else
// ./hardware_params.json, like get and bench.
func TestShowParamsFile(t *testing.T) {
	path := getEnv(t) // cpu:a and cpu:b
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, []byte(strings.ReplaceAll(getFile, `"cpu:`, `"cpu:z`)), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, params.DefaultFileName), []byte(strings.ReplaceAll(getFile, `"cpu:`, `"cpu:w`)), 0o644); err != nil {
		t.Fatal(err)
	}
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
