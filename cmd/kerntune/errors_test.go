package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner/device"
)

// execute runs a command line in-process and returns its error as the
// commands return it, before run turns it into an exit code.
func execute(args ...string) error {
	f := &Factory{IO: IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}}
	root := newRootCmd(f)
	root.SetArgs(args)
	return root.Execute()
}

// Errors keep their chain through the command line: a usage error wraps
// the library's error, so errors.Is and errors.As find the sentinel or
// type that caused it.
func TestUsageErrorsWrapTheCause(t *testing.T) {
	path := getEnv(t)
	dir := t.TempDir()
	broken := testutil.WriteFile(t, dir, "broken.json", "{not json")
	missing := filepath.Join(dir, "missing.json")
	var pathErr *paramfile.PathError
	tests := []struct {
		name string
		args []string
		is   error // nil: test with as
		as   any
	}{
		{"get: unknown family", []string{"get", "--kernel", "conv", "--shape", "1x2x3", "--params", path}, params.ErrUnknownFamily, nil},
		{"get: unknown dtype", []string{"get", "--kernel", "gemv_nt", "--dtype", "f64", "--shape", "1x2x3", "--params", path}, params.ErrUnknownDType, nil},
		{"get: shape of the wrong rank", []string{"get", "--kernel", "gemv_nt", "--shape", "1x896", "--params", path}, params.ErrInvalidShape, nil},
		{"show: missing file", []string{"show", missing}, os.ErrNotExist, nil},
		{"show: broken file", []string{"show", broken}, nil, &pathErr},
		{"export: missing file", []string{"export", "--t4", missing}, os.ErrNotExist, nil},
		{"merge: invalid input", []string{"merge", path, broken, "--out", filepath.Join(dir, "m.json")}, nil, &pathErr},
		{"tune: unparsable --out", []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "2x3", "--out", broken}, paramfile.ErrUnparsable, nil},
		{"tune: unknown backend", []string{"tune", "--backend", "vulkan", "--kernel", "softmax", "--out", filepath.Join(dir, "p.json")}, device.ErrUnknownBackend, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := execute(tt.args...)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("%v is not a usage error", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v does not wrap %v", err, tt.is)
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Errorf("%v does not wrap a %T", err, tt.as)
			}
		})
	}
}
