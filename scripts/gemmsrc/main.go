// Command gemmsrc writes the CUDA templates of the GEMM body for
// scripts/gemm_xcheck.py: DIR/t16.cu, DIR/t32.cu and DIR/tbf16.cu, the
// generated source of gemm_av in f16, f32 and bf16 without its header line and parameter #defines
// (the prelude, the signature and the body, which no parameter changes).
// The script puts each candidate's #defines in front, as kernels/gpu does.
//
//	go run ./scripts/gemmsrc DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/gemmsrc DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gemmsrc:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, dt := range kernels.DTypes {
		t, err := gpu.GemmTemplate(dt)
		if err != nil {
			return err
		}
		name := filepath.Join(dir, "t"+strings.TrimPrefix(string(dt), "f")+".cu")
		if err := os.WriteFile(name, []byte(t), 0o644); err != nil {
			return err
		}
	}
	return nil
}
