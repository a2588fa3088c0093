package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/tuner/device"
)

// The flags several commands share are read here, so that every command
// names them and their allowed values alike.

// addBackendFlag adds --backend (default auto) with the registered backends.
func addBackendFlag(cmd *cobra.Command, backend *string, note string) {
	cmd.Flags().StringVar(backend, "backend", "auto", "backend: auto, "+strings.Join(device.Backends(), ", ")+note)
}

// parseKernels resolves --kernel names; none means every family of the
// default workload (examples are tuned when named).
func parseKernels(names []string) ([]*kernels.Kernel, error) {
	if len(names) == 0 {
		return kernels.Defaults(), nil
	}
	return parseEach("--kernel", names, kernels.Get)
}

// dtypeNames lists the dtypes for help texts and completion: f32, f16, bf16.
func dtypeNames() []string {
	names := make([]string, len(kernels.DTypes))
	for i, d := range kernels.DTypes {
		names[i] = string(d)
	}
	return names
}

// parseDTypes resolves --dtype values.
func parseDTypes(names ...string) ([]kernels.DType, error) {
	return parseEach("--dtype", names, kernels.ParseDType)
}

// parseEach resolves each value of flag by parse; the first it rejects is
// a usage error naming the flag.
func parseEach[T any](flag string, values []string, parse func(string) (T, error)) ([]T, error) {
	out := make([]T, 0, len(values))
	for _, v := range values {
		x, err := parse(v)
		if err != nil {
			return nil, usageErrorf("%s: %w", flag, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// parseShapes resolves --shape values, which need exactly one family in
// ks (shapes differ between families), each checked against that
// family's shape rules.
func parseShapes(ks []*kernels.Kernel, shapes []string) ([]kernels.Case, error) {
	if len(shapes) == 0 {
		return nil, nil
	}
	if len(ks) != 1 {
		return nil, usageErrorf("--shape needs exactly one --kernel (shapes differ between families)")
	}
	cases := make([]kernels.Case, 0, len(shapes))
	for _, s := range shapes {
		shape, err := families.ParseShape(s)
		if err != nil {
			return nil, usageErrorf("--shape: %w", err)
		}
		if _, err := ks[0].Classify(shape); err != nil {
			return nil, usageErrorf("--shape %s: %w", s, err)
		}
		cases = append(cases, kernels.Case{Shape: shape})
	}
	return cases, nil
}

// paramsFileArg is the params file a command's optional FILE argument
// names, by default ./hardware_params.json.
func paramsFileArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return paramfile.DefaultFileName
}

// readParamsFile reads the params file a command reports on; a missing or
// invalid one is a usage error.
func readParamsFile(path string) (*paramfile.File, error) {
	pf, err := paramfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usageErrorCause(err, "%s: no such file (run kerntune tune first, or name the file)", path)
	}
	if err != nil {
		return nil, usageError{err}
	}
	return pf, nil
}

// readTrace reads the file --trace names.
func readTrace(path string) ([]trace.Record, error) {
	recs, err := trace.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--trace %w", err)
	}
	return recs, nil
}

// checkOutPath refuses, before any work, an --out file that cannot be
// written (see checkOutputFile).
func checkOutPath(path string) error { return checkOutputFile("--out", path) }

// checkOutputFile refuses, before any work, an output file (named by flag)
// that cannot be written: a path that exists and is not a regular file
// (/dev/full, a directory; the atomic write would rename over it) or a
// directory that is missing or read-only. Each is a usage error (exit 2).
func checkOutputFile(flag, path string) error {
	if err := paramfile.CheckRegular(path); err != nil {
		return usageErrorCause(err, "%s %s: %v; name a file", flag, path, err)
	}
	return checkOutputDir(flag, path)
}

// checkOutputDir refuses an output file whose directory cannot be written
// (the write makes a temporary file there and renames it).
func checkOutputDir(flag, path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return usageErrorf("%s %s: directory %s: %w", flag, path, dir, err)
	}
	if !st.IsDir() {
		return usageErrorf("%s %s: %s is not a directory", flag, path, dir)
	}
	probe, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe-*")
	if err != nil {
		return usageErrorf("%s %s: directory %s is not writable: %w", flag, path, dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// checkTraceOut refuses, before any work, a tune --trace that could not be
// appended to (see checkOutputFile; also an existing file that is not
// writable) or that holds something other than a trace: appending JSON
// lines to it would spoil it. A usage error (exit 2) naming --trace.
func checkTraceOut(path string) error {
	if err := checkOutputFile("--trace", path); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return nil // created by the first append
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return usageErrorCause(err, "--trace %s: %v", path, err)
	}
	f.Close()
	if _, err := trace.ReadFile(path); err != nil {
		return usageErrorCause(err, "--trace %s is not a trace (JSON lines of tune --trace), and tune appends to it: %v; name a new file or a trace", path, err)
	}
	return nil
}

// checkOutKind refuses, before any work, to replace an existing output
// file (named by flag) that is not of the kind the command writes (what,
// e.g. "a params file"; parse says why data is not one), unless force:
// what it holds would be lost. An empty file holds nothing and is replaced.
func checkOutKind(flag, path, what string, force bool, parse func([]byte) error) error {
	if force {
		return nil
	}
	data, err := paramfile.ReadFileLimit(path, paramfile.MaxFileSize)
	var tl *paramfile.TooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case errors.As(err, &tl):
		return usageErrorf("%s %s: %s, so not one this command writes; it is replaced only with --force", flag, path, tl.Reason(what))
	case err != nil:
		return usageErrorCause(err, "%s %s: %v", flag, path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := parse(data); err != nil {
		return usageErrorCause(err, "%s %s exists and is not %s (%v); it is replaced only with --force", flag, path, what, err)
	}
	return nil
}

// writeOut writes data to the file --out names (see writeOutput).
func writeOut(path string, data []byte) error { return writeOutput("--out", path, data) }

// writeOutput writes data to the output file flag names, atomically; a
// failure (a full disk, a directory that went away) is a usage error naming
// the flag, as every bad output location is (exit 2).
func writeOutput(flag, path string, data []byte) error {
	if err := paramfile.WriteFileAtomic(path, data); err != nil {
		return usageErrorCause(err, "%s %s: %v", flag, path, err)
	}
	return nil
}
