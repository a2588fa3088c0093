package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kerntune/kerntune/internal/mslcheck"
)

// MSLBatchSize is how many sources one clang run checks.
const MSLBatchSize = 400

// FindClang returns the clang the MSL checks use: $KERNTUNE_CLANG, else
// clang-14, else clang on the PATH.
func FindClang() (string, error) {
	if p := mslcheck.FindClang(); p != "" {
		return p, nil
	}
	return "", errors.New(NoMSLCompiler)
}

// NoMSLCompiler says what is missing when neither Apple's Metal compiler
// nor clang is found, and how to install one.
const NoMSLCompiler = "no Metal compiler found: neither Apple's (xcrun -sdk macosx metal: install Xcode or its command line tools) nor clang " +
	"($KERNTUNE_CLANG, clang-14 or clang on PATH: apt-get install clang-14, or set KERNTUNE_CLANG to a clang)"

// MSLCompiler is what checks Metal sources: Apple's Metal compiler
// through xcrun where it answers, else clang against kerntune's stand-in
// <metal_stdlib>; for one Metal language version.
type MSLCompiler struct {
	Xcrun   string // xcrun, when Apple's compiler is used
	Clang   string // clang, otherwise
	Version string // the Metal language version, "3.1" and so on
}

// FindMSLCompiler finds Apple's Metal compiler, else clang (NoMSLCompiler
// when neither is found), for a Metal language version.
func FindMSLCompiler(version string) (MSLCompiler, error) {
	if x := mslcheck.FindXcrun(); x != "" {
		return MSLCompiler{Xcrun: x, Version: version}, nil
	}
	cc, err := FindClang()
	if err != nil {
		return MSLCompiler{}, err
	}
	return MSLCompiler{Clang: cc, Version: version}, nil
}

// Name names the compiler as check prints it.
func (m MSLCompiler) Name() string {
	if m.Xcrun != "" {
		return "Apple's Metal compiler (xcrun -sdk macosx metal -std=metal" + m.Version + ")"
	}
	return filepath.Base(m.Clang)
}

// mlxInstantiation is MLX's explicit instantiation of a templated kernel.
// Metal's compiler accepts attributes there and decltype of a function
// template specialization; clang's C++ rejects both.
var mlxInstantiation = regexp.MustCompile(`(?m)^template \[\[host_name\("[A-Za-z0-9_]+"\)\]\] \[\[kernel\]\] decltype\(([A-Za-z0-9_]+)(<[^;]*>)\) [^;]*;$`)

// templateHead is the template parameter list just before a templated
// MLX kernel.
var templateHead = regexp.MustCompile(`(?m)^template <([^>]*)>\n\[\[kernel\]\] void ([A-Za-z0-9_]+)\(`)

// ForSyntaxCheck rewrites the one Metal construct of generated sources that
// clang cannot parse: MLX's templated [[kernel]] with its attributed
// explicit instantiation `template [[host_name("f")]] [[kernel]]
// decltype(f<...>) f<...>;`. Neither C++ (decltype of a specialization)
// nor C++ for OpenCL (no kernel templates, threadgroup memory only in a
// kernel) accepts it, so the template parameters become the instantiation's
// arguments (typedef T float; enum { BN = 8 };) in front of a plain kernel,
// which checks the body with exactly the arguments MLX compiles it with.
func ForSyntaxCheck(src string) string {
	for _, m := range mlxInstantiation.FindAllStringSubmatch(src, -1) {
		name, args := m[1], splitArgs(m[2][1:len(m[2])-1])
		h := templateHead.FindStringSubmatchIndex(src)
		if h == nil || src[h[4]:h[5]] != name {
			continue // left for clang to reject
		}
		decls := splitArgs(src[h[2]:h[3]])
		if len(decls) != len(args) {
			continue
		}
		var pre strings.Builder
		for k, d := range decls {
			f := strings.Fields(d)
			if len(f) != 2 {
				return src
			}
			if f[0] == "typename" || f[0] == "class" {
				fmt.Fprintf(&pre, "typedef %s %s; ", args[k], f[1])
			} else {
				fmt.Fprintf(&pre, "enum { %s = %s }; ", f[1], args[k])
			}
		}
		src = src[:h[0]] + pre.String() + "\nkernel void " + name + "(" + src[h[1]:]
		src = strings.Replace(src, m[0], "", 1)
	}
	return src
}

// splitArgs splits a template argument or parameter list at its commas.
func splitArgs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(a))
	}
	return out
}

// MSLSource is one candidate's Metal source for CheckMSL.
type MSLSource struct {
	Name string // the candidate in errors
	Func string // the kernel function's name (renamed per candidate in a batch)
	Text string
}

// CheckMSL checks Metal sources with clang off a Mac, in both of
// internal/mslcheck's modes: C++ syntax against a stand-in <metal_stdlib>,
// and address spaces as C++ for OpenCL. MLX's attributed instantiations are
// rewritten by ForSyntaxCheck first. It returns the number of clang runs.
func CheckMSL(ctx context.Context, clang string, srcs []MSLSource) (runs int, err error) {
	return CheckMSLWith(ctx, MSLCompiler{Clang: clang, Version: mslcheck.DefaultVersion}, srcs)
}

// CheckMSLWith is CheckMSL with a compiler and language version: Apple's
// compiler, where m has one, compiles the sources (batched as clang checks
// them) instead of clang's two checks.
func CheckMSLWith(ctx context.Context, m MSLCompiler, srcs []MSLSource) (runs int, err error) {
	dir, err := os.MkdirTemp("", "kerntune-msl-")
	if err != nil {
		return 0, fmt.Errorf("MSL check: %w", err)
	}
	defer os.RemoveAll(dir)
	in := make([]mslcheck.Source, len(srcs))
	for i, s := range srcs {
		in[i] = mslcheck.Source{Name: s.Name, Func: s.Func, Text: ForSyntaxCheck(s.Text)}
	}
	if m.Xcrun != "" {
		a, err := mslcheck.NewApple(m.Xcrun, dir, m.Version)
		if err != nil {
			return 0, fmt.Errorf("MSL check: %w", err)
		}
		for i := 0; i < len(in); i += MSLBatchSize {
			if err := ctx.Err(); err != nil {
				return runs, err
			}
			runs++
			if err := a.Check(ctx, in[i:min(i+MSLBatchSize, len(in))]); err != nil {
				return runs, err
			}
		}
		return runs, nil
	}
	chk, err := mslcheck.NewVersion(m.Clang, dir, m.Version)
	if err != nil {
		return 0, fmt.Errorf("MSL check: %w", err)
	}
	for _, mode := range mslcheck.Modes {
		if err := ctx.Err(); err != nil {
			return runs, err
		}
		n, err := chk.CheckAll(mode, in, MSLBatchSize)
		runs += n
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}
