package mslcheck

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

//go:embed shim
var shims embed.FS

// Mode is how clang parses the MSL.
type Mode int

// The modes of the check.
const (
	// Syntax: C++17 for aarch64 against shim/cpp; address spaces are erased.
	Syntax Mode = iota
	// AddressSpaces: C++ for OpenCL (clang -x cl -cl-std=clc++) against
	// shim/opencl; Metal address spaces become OpenCL ones.
	AddressSpaces
)

// Modes lists both modes.
var Modes = []Mode{Syntax, AddressSpaces}

func (m Mode) String() string {
	switch m {
	case Syntax:
		return "syntax"
	case AddressSpaces:
		return "address-space"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Source is the MSL of one candidate.
type Source struct {
	// Name identifies the candidate in errors (family, dtype, parameters).
	Name string
	// Func is the kernel function's name. A batch renames it per candidate:
	// OpenCL kernel names must be unique in a translation unit, whatever
	// namespace holds them. Empty: not renamed.
	Func string
	// Text is the complete source, as given to newLibraryWithSource.
	Text string
}

// FindClang returns the clang the checks run: $KERNTUNE_CLANG, or clang-14
// or clang on PATH; "" if there is none.
func FindClang() string {
	for _, name := range []string{os.Getenv("KERNTUNE_CLANG"), "clang-14", "clang"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Require returns FindClang's clang, or skips tb when there is none; with
// KTDEV_REQUIRE_CLANG set (as in CI) a missing clang fails tb instead.
func Require(tb testing.TB) string {
	tb.Helper()
	if cc := FindClang(); cc != "" {
		return cc
	}
	if os.Getenv("KTDEV_REQUIRE_CLANG") != "" {
		tb.Fatal("clang not found (KERNTUNE_CLANG, clang-14, clang) but KTDEV_REQUIRE_CLANG is set")
	}
	tb.Skip("clang not found; the MSL checks need clang (apt-get install clang-14)")
	return ""
}

// DefaultVersion is the Metal language version New checks against: 3.1,
// the oldest that MLX compiles with (macOS 14), the first with bfloat
// (__HAVE_BFLOAT__), which MLX's helpers need.
const DefaultVersion = "3.1"

// Versions are the Metal language versions a Checker takes.
var Versions = []string{"3.0", "3.1", "3.2", "4.0"}

// VersionMacro is __METAL_VERSION__ for a Metal language version ("3.2":
// 320), or an error naming the versions allowed.
func VersionMacro(v string) (int, error) {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || fmt.Sprintf("%d.%d", major, minor) != v || major < 3 || major > 4 || minor > 9 {
		return 0, fmt.Errorf("Metal language version %q: allowed are %s", v, strings.Join(Versions, ", "))
	}
	return major*100 + minor*10, nil
}

// Checker runs clang against the stand-in headers, for one Metal language
// version.
type Checker struct {
	clang   string
	dir     string
	version string
	macro   int // __METAL_VERSION__
	files   atomic.Int64
}

// New writes the stand-in headers under dir (a test's TempDir, say) and
// returns a Checker that runs clang there for DefaultVersion.
func New(clang, dir string) (*Checker, error) {
	return NewVersion(clang, dir, DefaultVersion)
}

// NewVersion is New for a Metal language version ("3.2"): clang sees
// __METAL_VERSION__ (320) and, from 3.1 on, __HAVE_BFLOAT__, as Apple's
// compiler defines them.
func NewVersion(clang, dir, version string) (*Checker, error) {
	macro, err := VersionMacro(version)
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(shims, "shim", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := shims.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("writing the MSL stand-in headers to %s: %w", dir, err)
	}
	return &Checker{clang: clang, dir: dir, version: version, macro: macro}, nil
}

// Version is the Metal language version the checker checks against.
func (c *Checker) Version() string { return c.version }

// args are clang's arguments for checking file in mode.
func (c *Checker) args(mode Mode, file string) []string {
	// Metal's attributes are unknown to clang; Lint checks them instead.
	common := []string{"-fsyntax-only", "-Wno-unknown-attributes", "-ferror-limit=10",
		"-D__METAL_VERSION__=" + strconv.Itoa(c.macro)}
	if c.macro >= 310 {
		common = append(common, "-D__HAVE_BFLOAT__=1")
	}
	if mode == AddressSpaces {
		// -cl-no-stdinc: OpenCL's own vector types and builtins would clash
		// with the MSL names the stand-in declares.
		return append([]string{"-x", "cl", "-cl-std=clc++", "-cl-no-stdinc"}, append(common,
			"-I", filepath.Join(c.dir, "shim", "opencl"), file)...)
	}
	// aarch64: x86-64 clang-14 rejects _Float16, the stand-in's half.
	return append([]string{"--target=aarch64-linux-gnu", "-x", "c++", "-std=c++17"}, append(common,
		"-I", filepath.Join(c.dir, "shim", "cpp"), file)...)
}

// run checks one file and names the candidate of each error line; lint
// holds Lint's findings, already formatted, which fail the check too.
func (c *Checker) run(mode Mode, name, text string, spans []span, lintOf func(path string) []string) error {
	path := filepath.Join(c.dir, fmt.Sprintf("check%d.metal", c.files.Add(1)))
	lint := lintOf(path)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	out, err := exec.Command(c.clang, c.args(mode, path)...).CombinedOutput()
	if err == nil && len(lint) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err != nil {
		b.Write(annotate(out, path, spans))
	}
	for _, l := range lint {
		b.WriteString(l + "\n")
	}
	if err == nil {
		err = errors.New("Metal rejects what clang accepts")
	}
	return fmt.Errorf("MSL %s check of %s (%s, Metal %s): %w\n%s", mode, name, path, c.version, err, b.Bytes())
}

// CheckText checks one translation unit as it is, unbatched. Lint's
// findings are reported as clang reports errors: path:line:1: error: ….
func (c *Checker) CheckText(mode Mode, name, text string) error {
	return c.run(mode, name, text, nil, func(path string) []string {
		var lint []string
		for _, d := range Lint(text) {
			lint = append(lint, fmt.Sprintf("%s:%d:1: error: %s", path, d.Line, d.Msg))
		}
		return lint
	})
}

// Check checks srcs in one clang run: <metal_stdlib> once, then each
// source in a namespace of its own with its kernel renamed and its macros
// undefined after it. Every source must open with the include
// (IncludeFirst), which the batch hoists.
func (c *Checker) Check(mode Mode, srcs []Source) error {
	text, spans, err := batch(srcs)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%d candidates", len(srcs))
	if len(srcs) > 0 {
		name = fmt.Sprintf("%d candidates from %s", len(srcs), srcs[0].Name)
	}
	var lint []string
	for _, s := range srcs {
		for _, d := range Lint(s.Text) {
			lint = append(lint, fmt.Sprintf("[%s] %s", s.Name, d))
		}
	}
	return c.run(mode, name, text, spans, func(string) []string { return lint })
}

// CheckAll checks srcs in batches of at most per sources, as many clang
// runs at once as GOMAXPROCS. It returns the number of clang runs and every
// failing batch's error.
func (c *Checker) CheckAll(mode Mode, srcs []Source, per int) (runs int, err error) {
	if per < 1 {
		per = 1
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, runtime.GOMAXPROCS(0))
	)
	for i := 0; i < len(srcs); i += per {
		batch := srcs[i:min(i+per, len(srcs))]
		runs++
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := c.Check(mode, batch); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return runs, errors.Join(errs...)
}

// span says which candidate a batch's lines from line on belong to.
type span struct {
	line int
	name string
}

var (
	defineRE  = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)`)
	includeRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*<metal_stdlib>[ \t]*\n`)
)

// batch returns one translation unit holding every source: <metal_stdlib>
// once, then each source in its own namespace with its kernel renamed, and
// every macro it defines undefined after it, so that candidates do not see
// each other's parameters. Hoisting the include would hide a #define placed
// before it, so a source that does not begin with the include (IncludeFirst)
// is an error.
func batch(srcs []Source) (string, []span, error) {
	var b strings.Builder
	line := 1 // the line the next write starts on
	write := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		line += strings.Count(s, "\n")
		b.WriteString(s)
	}
	write("#include <metal_stdlib>\n")
	spans := make([]span, 0, len(srcs))
	for i, s := range srcs {
		if err := IncludeFirst(s.Text); err != nil {
			return "", nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		spans = append(spans, span{line, s.Name})
		text := includeRE.ReplaceAllLiteralString(s.Text, "")
		if s.Func != "" {
			write("#define %s %s_kt%d\n", s.Func, s.Func, i)
		}
		write("namespace kt_candidate_%d {\n%s\n}\n", i, text)
		if s.Func != "" {
			write("#undef %s\n", s.Func)
		}
		for _, m := range defineRE.FindAllStringSubmatch(text, -1) {
			write("#undef %s\n", m[1])
		}
	}
	return b.String(), spans, nil
}

// IncludeFirst reports an error unless src opens (after comments and blank
// lines) with #include <metal_stdlib> and using namespace metal;: a macro
// defined before them would rewrite Apple's headers.
func IncludeFirst(src string) error {
	var code []string
	for n, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		if len(code) == 0 && t != "#include <metal_stdlib>" {
			if m := defineRE.FindStringSubmatch(t); m != nil {
				return fmt.Errorf("line %d: #define %s before #include <metal_stdlib>", n+1, m[1])
			}
			return fmt.Errorf("line %d: %q before #include <metal_stdlib>", n+1, t)
		}
		code = append(code, t)
		if len(code) == 2 {
			if t != "using namespace metal;" {
				return fmt.Errorf("line %d: %q where using namespace metal; should follow #include <metal_stdlib>", n+1, t)
			}
			return nil
		}
	}
	return errors.New("no #include <metal_stdlib> followed by using namespace metal;")
}

// annotate prefixes clang's diagnostics about path with the candidate
// their line belongs to.
func annotate(out []byte, path string, spans []span) []byte {
	if len(spans) == 0 {
		return out
	}
	prefix := []byte(path + ":")
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, prefix); ok {
			if n, err := strconv.Atoi(string(rest[:max(0, bytes.IndexByte(rest, ':'))])); err == nil {
				name := ""
				for _, s := range spans {
					if s.line <= n {
						name = s.name
					}
				}
				if name != "" {
					fmt.Fprintf(&b, "[%s] ", name)
				}
			}
		}
		b.Write(l)
	}
	return b.Bytes()
}

// CheckModes checks srcs in every mode, per sources a clang run, failing
// t on the first error; after each mode it logs, and appends to the
// summary file (Summary), the line describe makes of the mode, its clang
// runs and the time they took.
func (c *Checker) CheckModes(t testing.TB, srcs []Source, per int, describe func(mode Mode, runs int, took time.Duration) string) {
	t.Helper()
	for _, mode := range Modes {
		start := time.Now()
		runs, err := c.CheckAll(mode, srcs, per)
		if err != nil {
			t.Fatal(err)
		}
		line := describe(mode, runs, time.Since(start).Round(100*time.Millisecond))
		t.Log(line)
		if err := Summary(line); err != nil {
			t.Fatal(err)
		}
	}
}

// Summary appends line to the file $KTDEV_SUMMARY names, if set: a passing
// package's output is hidden under go test ./..., and CI prints the file.
func Summary(line string) error {
	f := os.Getenv("KTDEV_SUMMARY")
	if f == "" {
		return nil
	}
	fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("KTDEV_SUMMARY=%s: %w", f, err)
	}
	if _, err := fmt.Fprintln(fh, line); err != nil {
		fh.Close()
		return fmt.Errorf("KTDEV_SUMMARY=%s: %w", f, err)
	}
	return fh.Close()
}
