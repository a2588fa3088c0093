package mslstd

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated headers")

// generatedFiles are the headers made from the table, by path from this
// package's directory.
func generatedFiles() map[string]string {
	check := CheckHeader()
	return map[string]string{
		"../mslcheck/shim/metal_lib.h":  check,
		"../mslemu/include/metal_lib.h": EmuHeader(),
	}
}

// The committed headers are what the table gives now: the check and the
// emulation cannot drift apart.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for path, want := range generatedFiles() {
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s differs from what internal/mslstd generates: run go test ./internal/mslstd -update", filepath.Clean(path))
		}
	}
}
