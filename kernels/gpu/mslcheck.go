package gpu

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// mslShim stands in for <metal_stdlib> so that clang can syntax-check MSL
// off a Mac (testdata/mslshim/metal_stdlib says how).
//
//go:embed testdata/mslshim/metal_stdlib
var mslShim []byte

// MSLBatchSize is how many sources one clang run checks.
const MSLBatchSize = 250

// FindClang returns the clang the MSL syntax check uses: $KERNTUNE_CLANG,
// else clang-14, else clang on the PATH.
func FindClang() (string, error) {
	for _, name := range []string{os.Getenv("KERNTUNE_CLANG"), "clang-14", "clang"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no clang found (set KERNTUNE_CLANG, or install clang-14)")
}

// mlxInstantiation is MLX's explicit instantiation of a templated kernel.
// Metal's compiler accepts attributes there and decltype of a function
// template specialization; clang's C++ rejects both.
var mlxInstantiation = regexp.MustCompile(`(?m)^template \[\[host_name\("([A-Za-z0-9_]+)"\)\]\] \[\[kernel\]\] decltype\(([^;]*)\) ([^;]*);$`)

// ForSyntaxCheck rewrites the one Metal construct of generated sources that
// clang's C++ cannot parse: MLX's `template [[host_name("f")]] [[kernel]]
// decltype(f<...>) f<...>;` becomes a use of f<...> (its address), which
// instantiates the template with the same arguments, so the body is
// checked with them just the same.
func ForSyntaxCheck(src string) string {
	return mlxInstantiation.ReplaceAllString(src, "[[maybe_unused]] static const auto kt_instance_$1 = &$3;")
}

// MSLBatch joins sources for one clang run: each in its own namespace,
// with its #defines undone after it, rewritten by ForSyntaxCheck.
func MSLBatch(srcs []string) string {
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\n")
	for i, s := range srcs {
		var defs []string
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "#define ") && !strings.Contains(line, "(") {
				if f := strings.Fields(line); len(f) == 3 {
					defs = append(defs, f[1])
				}
			}
		}
		s = strings.Replace(ForSyntaxCheck(s), "#include <metal_stdlib>\n", "", 1)
		fmt.Fprintf(&b, "namespace kt_candidate_%d {\n%s\n}\n", i, s)
		for _, d := range defs {
			fmt.Fprintf(&b, "#undef %s\n", d)
		}
	}
	return b.String()
}

// CheckMSL syntax-checks Metal sources with clang against the shim:
// MSLBatchSize sources per clang run, up to four runs at a time. The
// error holds each failing batch's first errors, with the indexes of its
// sources.
func CheckMSL(ctx context.Context, clang string, srcs []string) error {
	dir, err := os.MkdirTemp("", "kerntune-msl-")
	if err != nil {
		return fmt.Errorf("MSL syntax check: %w", err)
	}
	defer os.RemoveAll(dir)
	shim := filepath.Join(dir, "shim")
	if err := os.Mkdir(shim, 0o755); err != nil {
		return fmt.Errorf("MSL syntax check: %w", err)
	}
	if err := os.WriteFile(filepath.Join(shim, "metal_stdlib"), mslShim, 0o644); err != nil {
		return fmt.Errorf("MSL syntax check: %w", err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, 4)
	for start := 0; start < len(srcs); start += MSLBatchSize {
		end := min(start+MSLBatchSize, len(srcs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			path := filepath.Join(dir, fmt.Sprintf("batch_%d.metal", start))
			err := os.WriteFile(path, []byte(MSLBatch(srcs[start:end])), 0o644)
			if err == nil {
				var out []byte
				out, err = exec.CommandContext(ctx, clang, "--target=aarch64-linux-gnu", "-x", "c++", "-std=c++17", "-fsyntax-only",
					"-Wno-unknown-attributes", "-ferror-limit=5", "-I", shim, path).CombinedOutput()
				if err != nil {
					err = fmt.Errorf("%w\n%s", err, out)
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("MSL syntax check of sources %d..%d (namespace kt_candidate_<i> is source start+i): %w", start, end-1, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
