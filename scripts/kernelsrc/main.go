// Command kernelsrc prints the source a built-in family's GPU body
// generates for one candidate, as the backends compile it: to read it, or
// to compile it with a vendor tool (nvcc -cubin, then cuobjdump -sass) and
// count the instructions of a kernel's inner loop.
//
//	go run ./scripts/kernelsrc FAMILY API DTYPE NAME=VALUE...
//	go run ./scripts/kernelsrc qgemv cuda f16 TPR=4 RPB=32 RPT=1 VEC=4 UNROLL=2
//
// Parameters not named take the family's defaults.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/kernelsrc FAMILY API DTYPE NAME=VALUE...")
		os.Exit(2)
	}
	src, err := source(os.Args[1], gpu.API(os.Args[2]), kernels.DType(os.Args[3]), os.Args[4:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernelsrc:", err)
		os.Exit(1)
	}
	fmt.Print(src)
}

func source(family string, api gpu.API, dt kernels.DType, assigns []string) (string, error) {
	k, err := kernels.Get(family)
	if err != nil {
		return "", err
	}
	sp, ok := k.Space("gpu")
	if !ok {
		return "", fmt.Errorf("%s has no GPU parameter space", family)
	}
	p := sp.Defaults()
	for _, a := range assigns {
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			return "", fmt.Errorf("argument %q: want NAME=VALUE", a)
		}
		v, err := strconv.Atoi(val)
		if err != nil {
			return "", fmt.Errorf("argument %q: the value must be an integer: %w", a, err)
		}
		if _, known := p[name]; !known {
			return "", fmt.Errorf("argument %q: %s has no GPU parameter %s", a, family, name)
		}
		p[name] = v
	}
	_, src, err := gpu.Source(family, api, dt, p)
	return src, err
}
