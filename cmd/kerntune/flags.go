package main

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/trace"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/tuner"
)

// The flags several commands share are read here, so that every command
// names them and their allowed values alike.

// addBackendFlag adds --backend (default auto) with the registered backends.
func addBackendFlag(cmd *cobra.Command, backend *string, note string) {
	cmd.Flags().StringVar(backend, "backend", "auto", "backend: auto, "+strings.Join(tuner.Backends(), ", ")+note)
}

// parseKernels resolves --kernel names; none means every family.
func parseKernels(names []string) ([]*kernels.Kernel, error) {
	if len(names) == 0 {
		return kernels.All(), nil
	}
	ks := make([]*kernels.Kernel, 0, len(names))
	for _, name := range names {
		k, err := kernels.Get(name)
		if err != nil {
			return nil, usageErrorf("--kernel: %w", err)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// parseDTypes resolves --dtype values.
func parseDTypes(names ...string) ([]kernels.DType, error) {
	dts := make([]kernels.DType, 0, len(names))
	for _, d := range names {
		dt, err := kernels.ParseDType(d)
		if err != nil {
			return nil, usageErrorf("--dtype: %w", err)
		}
		dts = append(dts, dt)
	}
	return dts, nil
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
		shape, err := params.ParseShape(s)
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
	return params.DefaultFileName
}

// readParamsFile reads the params file a command reports on; a missing or
// invalid one is a usage error.
func readParamsFile(path string) (*params.File, error) {
	pf, err := params.ReadFile(path)
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
