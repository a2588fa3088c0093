package paramfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
)

func TestMergeIntoFileKeepsUnparsable(t *testing.T) {
	path := filepath.Join(t.TempDir(), paramfile.DefaultFileName)
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := paramfile.MergeIntoFile(path, paramfile.TypicalUpdate(), false); !errors.Is(err, paramfile.ErrUnparsable) {
		t.Fatalf("%v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Fatal("unparsable file overwritten")
	}
	if err := paramfile.MergeIntoFile(path, paramfile.TypicalUpdate(), true); err != nil {
		t.Fatal(err)
	}
	l, err := params.Load(path, params.Options{Device: "cpu:test-2c", Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Resolve(families.GemvNT, "f32", []int{1, 896, 4864})
	if err != nil || r.Params["BN"] != (params.Value{Value: 16, Source: "file:cpu:test-2c/gemv_nt/f32/1x896x4864"}) {
		t.Fatalf("%v %+v", err, r)
	}
}

// A params file over MaxFileSize is refused, before it is read, by every
// reader of the package, with an error naming the file and the limit; an
// existing --out that large is not overwritten without force.
func TestParamsFileTooLarge(t *testing.T) {
	path := paramfile.SparseFile(t, `{"schema_version": 1, "devices": {}}`, paramfile.MaxFileSize+1)
	check := func(what string, err error) {
		t.Helper()
		var pe *paramfile.PathError
		if !errors.As(err, &pe) || pe.File != path || !strings.Contains(err.Error(), "larger than 64 MiB, the limit of a params file") {
			t.Errorf("%s: %v; want a PathError naming %s and 64 MiB", what, err, path)
		}
	}
	_, err := paramfile.ReadFile(path)
	check("ReadFile", err)
	_, err = params.Open(params.Options{Path: path})
	check("Open", err)
	_, err = params.Load(path, params.Options{})
	check("Load", err)
	_, _, err = paramfile.MergeFiles([]string{path})
	check("MergeFiles", err)
	if err := paramfile.MergeIntoFile(path, paramfile.TypicalUpdate(), false); !errors.Is(err, paramfile.ErrUnparsable) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("MergeIntoFile: %v; want ErrUnparsable naming the limit", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != paramfile.MaxFileSize+1 {
		t.Errorf("the file was changed: %v", err)
	}
	if err := paramfile.MergeIntoFile(path, paramfile.TypicalUpdate(), true); err != nil {
		t.Errorf("MergeIntoFile with force: %v", err)
	}
	if _, err := paramfile.ReadFile(path); err != nil {
		t.Errorf("the replaced file: %v", err)
	}
}
