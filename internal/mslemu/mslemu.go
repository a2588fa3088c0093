package mslemu

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

//go:embed include
var include embed.FS

// Arg binds one parameter of a kernel, in the order of its signature: a
// buffer passed as a pointer (device or constant T*), a buffer passed as a
// reference (constant int&), or the value of an attribute.
type Arg struct {
	Buffer int    // index into Launch.Buffers
	Ref    bool   // the buffer is bound to a reference
	Attr   string // the attribute's name (thread_position_in_threadgroup...); set: not a buffer
}

// Buf binds buffer i to a pointer parameter.
func Buf(i int) Arg { return Arg{Buffer: i} }

// Ref binds buffer i to a reference parameter (constant int& n).
func Ref(i int) Arg { return Arg{Buffer: i, Ref: true} }

// Attr binds an attribute, such as thread_position_in_threadgroup.
func Attr(name string) Arg { return Arg{Attr: name} }

// attrs are the C++ expressions of the attributes the emulator provides.
var attrs = map[string]string{
	"thread_position_in_threadgroup":   "kt_emu::tpitg()",
	"threadgroup_position_in_grid":     "kt_emu::tgpig()",
	"thread_position_in_grid":          "kt_emu::tpig()",
	"threads_per_threadgroup":          "kt_emu::tptg()",
	"dispatch_threads_per_threadgroup": "kt_emu::dtptg()",
	"threads_per_grid":                 "kt_emu::tpg()",
	"grid_size":                        "kt_emu::tpg()",
	"threadgroups_per_grid":            "kt_emu::tgpg()",
	"thread_index_in_threadgroup":      "kt_emu::tiitg()",
	"thread_index_in_simdgroup":        "kt_emu::tiisg()",
	"simdgroup_index_in_threadgroup":   "kt_emu::siitg()",
	"threads_per_simdgroup":            "kt_emu::tpsg()",
	"simdgroups_per_threadgroup":       "kt_emu::sgptg()",
}

// Attributes lists the attributes a kernel may take.
func Attributes() []string {
	var names []string
	for n := range attrs {
		names = append(names, n)
	}
	return names
}

// Kernel is one kernel of a program.
type Kernel struct {
	Name   string // the kernel in errors (family, dtype, parameters)
	Source string // the complete MSL, opening with #include <metal_stdlib>
	Func   string // the kernel function's name
	Args   []Arg
	// Version is the Metal language version the kernel is compiled for
	// ("3.1"): it defines __METAL_VERSION__ and, from 3.1 on,
	// __HAVE_BFLOAT__ around the kernel, as Apple's compiler does (MLX's
	// bfloat helpers need them). "": neither is defined.
	Version string
}

// Launch is one run of a kernel of the program.
type Launch struct {
	Kernel int // index into the kernels the program was built from
	// Groups are threadgroups per grid and Group threads per threadgroup
	// (dispatchThreadgroups). Where Threads is set instead of Groups, the
	// launch is dispatchThreads: Threads in all, threadgroups of Group
	// threads cut short at the grid's end.
	Groups, Group, Threads [3]int
	// Buffers hold the arguments' contents, replaced by what they hold
	// after the run. Each is allocated 16-byte aligned and padded to a
	// multiple of 16 bytes, as a Metal buffer would be, between guard bytes
	// of 0xff that the kernel must leave alone.
	Buffers [][]byte
}

// Result is what one launch did.
type Result struct {
	// Err is why the launch failed: a deadlock at a barrier, a write past
	// a buffer's end. A kernel that crashes fails its program's Run.
	Err error
	// Shared is the threadgroup memory the kernel's threadgroups declared,
	// in bytes (each array aligned to 16 bytes).
	Shared int
}

// Program is kernels compiled into one executable.
type Program struct {
	bin     string
	dir     string
	kernels []Kernel
}

var (
	defineRE  = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)`)
	includeRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*<metal_stdlib>[ \t]*\n`)
	// A threadgroup array: threadgroup TYPE NAME[...] (in a macro too).
	tgArrayRE = regexp.MustCompile(`\bthreadgroup[ \t]+([A-Za-z_][A-Za-z0-9_:]*(?:<[^;<>]*>)?)[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*((?:\[[^\]\n]*\])+)`)
)

// Prepare rewrites one kernel's MSL for the emulator: the include goes
// (the program includes the stand-in once), and each threadgroup array
// becomes one allocation per threadgroup, shared by its threads.
func Prepare(src string) string {
	src = includeRE.ReplaceAllLiteralString(src, "")
	return tgArrayRE.ReplaceAllString(src, "KT_THREADGROUP_ARRAY($1, $2, $3)")
}

// headers are the stand-in <metal_stdlib>, the files it includes (the
// vector types and library functions generated from internal/mslstd) and
// <metal_simdgroup>, which MLX headers include.
var headers = []string{"metal_stdlib", "metal_types.h", "metal_lib.h", "metal_simdgroup"}

// Header is the stand-in <metal_stdlib> itself, without the files it
// includes (headers).
func Header() string {
	b, err := include.ReadFile("include/metal_stdlib")
	if err != nil {
		panic(err) // embedded
	}
	return string(b)
}

// program is the C++ of a batch: the stand-in, each kernel in its own
// namespace with every macro it defines undefined after it, a launcher per
// kernel, and main (runner).
func program(ks []Kernel) (string, error) {
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\n")
	for i, k := range ks {
		text := Prepare(k.Source)
		var major, minor int
		if k.Version != "" {
			if _, err := fmt.Sscanf(k.Version, "%d.%d", &major, &minor); err != nil {
				return "", fmt.Errorf("%s: Metal language version %q: %w", k.Name, k.Version, err)
			}
			fmt.Fprintf(&b, "#define __METAL_VERSION__ %d\n", major*100+minor*10)
			if major*100+minor*10 >= 310 {
				b.WriteString("#define __HAVE_BFLOAT__ 1\n")
			}
		}
		fmt.Fprintf(&b, "namespace kt_k%d {\n%s\n}\n", i, text)
		if k.Version != "" {
			b.WriteString("#undef __METAL_VERSION__\n#undef __HAVE_BFLOAT__\n")
		}
		for _, m := range defineRE.FindAllStringSubmatch(text, -1) {
			fmt.Fprintf(&b, "#undef %s\n", m[1])
		}
	}
	b.WriteString("#undef kernel\n#undef device\n#undef constant\n#undef threadgroup\n#undef thread\n")
	b.WriteString("using kt_emu::KtPtr;\nusing kt_emu::KtRef;\n")
	b.WriteString("static void kt_bind(int k, void** b) {\n  switch (k) {\n")
	for i, k := range ks {
		var args []string
		for _, a := range k.Args {
			switch {
			case a.Attr != "":
				e, ok := attrs[a.Attr]
				if !ok {
					return "", fmt.Errorf("%s: the emulator has no attribute %s", k.Name, a.Attr)
				}
				args = append(args, e)
			case a.Ref:
				args = append(args, fmt.Sprintf("KtRef{b[%d]}", a.Buffer))
			default:
				args = append(args, fmt.Sprintf("KtPtr{b[%d]}", a.Buffer))
			}
		}
		fmt.Fprintf(&b, "  case %d: kt_emu::body = [=] { kt_k%d::%s(%s); }; return;\n", i, i, k.Func, strings.Join(args, ", "))
	}
	b.WriteString("  }\n  std::abort();\n}\n")
	b.WriteString(runner)
	return b.String(), nil
}

// runner reads launches from stdin, a line each: kernel, groups (x y z;
// or threads, with dispatch 1), threads per group (x y z), dispatch, the
// file of the buffers and their sizes. It writes the buffers after the run
// to the file + ".out" and prints "ok SHARED" or "fail REASON" per launch.
const runner = `
int main() {
  int k, disp, nb;
  unsigned g[3], t[3];
  char path[4096];
  const size_t guard = 256;
  while (std::scanf("%d %u %u %u %u %u %u %d %4095s %d", &k, &g[0], &g[1], &g[2], &t[0], &t[1], &t[2], &disp, path, &nb) == 10) {
    std::vector<size_t> sz(nb), cap(nb);
    std::vector<unsigned char*> raw(nb);
    std::vector<void*> bufs(nb);
    for (int i = 0; i < nb; ++i) {
      if (std::scanf("%zu", &sz[i]) != 1) return 2;
      cap[i] = std::max<size_t>(16, (sz[i] + 15) / 16 * 16);
      raw[i] = (unsigned char*)std::aligned_alloc(64, (cap[i] + 2 * guard + 63) / 64 * 64);
      std::memset(raw[i], 0xff, cap[i] + 2 * guard);
      bufs[i] = raw[i] + guard;
    }
    FILE* f = std::fopen(path, "rb");
    for (int i = 0; i < nb; ++i)
      if (!f || std::fread(bufs[i], 1, sz[i], f) != sz[i]) return 3;
    std::fclose(f);
    kt_bind(k, bufs.data());
    kt_emu::failure = nullptr;
    kt_emu::arena_peak = 0;
    metal::uint3 groups{g[0], g[1], g[2]}, threads{g[0] * t[0], g[1] * t[1], g[2] * t[2]};
    if (disp) {
      threads = groups;
      groups = {(g[0] + t[0] - 1) / t[0], (g[1] + t[1] - 1) / t[1], (g[2] + t[2] - 1) / t[2]};
    }
    kt_emu::grid_threads = threads;
    kt_emu::full_size = {t[0], t[1], t[2]};
    kt_emu::grid_groups = groups;
    bool ok = true;
    for (unsigned z = 0; ok && z < groups.z; ++z)
      for (unsigned y = 0; ok && y < groups.y; ++y)
        for (unsigned x = 0; ok && x < groups.x; ++x) {
          metal::uint3 n{std::min(t[0], threads.x - x * t[0]), std::min(t[1], threads.y - y * t[1]), std::min(t[2], threads.z - z * t[2])};
          ok = kt_emu::run_group({x, y, z}, n);
        }
    for (int i = 0; ok && i < nb; ++i)
      for (size_t j = 0; j < guard; ++j)
        if (raw[i][j] != 0xff || raw[i][guard + cap[i] + j] != 0xff) {
          static char msg[128];
          std::snprintf(msg, sizeof msg, "wrote outside buffer %d (%zu bytes)", i, sz[i]);
          kt_emu::failure = msg, ok = false;
          break;
        }
    std::string out = std::string(path) + ".out";
    FILE* o = std::fopen(out.c_str(), "wb");
    for (int i = 0; i < nb; ++i) std::fwrite(bufs[i], 1, sz[i], o);
    std::fclose(o);
    if (ok) std::printf("ok %zu\n", kt_emu::arena_peak);
    else std::printf("fail %s\n", kt_emu::failure);
    std::fflush(stdout);
    for (int i = 0; i < nb; ++i) std::free(raw[i]);
  }
  return 0;
}
`

// Build compiles kernels into one program in dir with cc (clang, or a
// C++20 compiler with __fp16). Compile errors name the kernels whose lines
// they are on.
func Build(ctx context.Context, cc, dir string, ks []Kernel) (*Program, error) {
	return build(ctx, cc, dir, ks, "-O1")
}

// BuildUnoptimized is Build without the compiler's optimisation, for a
// kernel built to show that it compiles and runs once: a kernel of
// thousands of calls compiles about four times faster so.
func BuildUnoptimized(ctx context.Context, cc, dir string, ks []Kernel) (*Program, error) {
	return build(ctx, cc, dir, ks, "-O0")
}

func build(ctx context.Context, cc, dir string, ks []Kernel, opt string) (*Program, error) {
	if len(ks) == 0 {
		return nil, errors.New("mslemu: no kernels")
	}
	inc := filepath.Join(dir, "include")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		return nil, fmt.Errorf("mslemu: %w", err)
	}
	for _, name := range headers {
		b, err := include.ReadFile("include/" + name)
		if err != nil {
			return nil, fmt.Errorf("mslemu: %w", err)
		}
		if err := os.WriteFile(filepath.Join(inc, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("mslemu: %w", err)
		}
	}
	text, err := program(ks)
	if err != nil {
		return nil, fmt.Errorf("mslemu: %w", err)
	}
	f, err := os.CreateTemp(dir, "emu-*.cpp")
	if err != nil {
		return nil, fmt.Errorf("mslemu: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return nil, fmt.Errorf("mslemu: %w", err)
	}
	f.Close()
	bin := strings.TrimSuffix(f.Name(), ".cpp")
	args := []string{"-x", "c++", "-std=c++20", opt, "-w", "-fno-exceptions", "-I", inc, f.Name(), "-lstdc++", "-lm", "-o", bin}
	if out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mslemu: compiling %d kernels (%s...): %v\n%s", len(ks), ks[0].Name, err, firstErrors(out, 30))
	}
	return &Program{bin: bin, dir: dir, kernels: ks}, nil
}

// firstErrors keeps the first n lines of a compiler's output.
func firstErrors(out []byte, n int) string {
	lines := strings.SplitN(string(out), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// Run runs the launches one after another in one process and replaces
// their buffers with the contents after each run. An error is the
// program's (a crash names the launch it was in); a launch's own failure is
// its Result's Err.
func (p *Program) Run(ctx context.Context, ls []*Launch) ([]Result, error) {
	var stdin bytes.Buffer
	paths := make([]string, len(ls))
	for i, l := range ls {
		if l.Kernel < 0 || l.Kernel >= len(p.kernels) {
			return nil, fmt.Errorf("mslemu: launch %d of kernel %d of %d", i, l.Kernel, len(p.kernels))
		}
		paths[i] = filepath.Join(p.dir, fmt.Sprintf("%s.launch%d", filepath.Base(p.bin), i))
		var data []byte
		for _, b := range l.Buffers {
			data = append(data, b...)
		}
		if err := os.WriteFile(paths[i], data, 0o644); err != nil {
			return nil, fmt.Errorf("mslemu: %w", err)
		}
		g, disp := l.Groups, 0
		if l.Threads != [3]int{} {
			g, disp = l.Threads, 1
		}
		for d := range 3 {
			if g[d] < 1 || l.Group[d] < 1 {
				return nil, fmt.Errorf("mslemu: launch %d of %s: grid %v, threadgroups %v", i, p.kernels[l.Kernel].Name, g, l.Group)
			}
		}
		if n := l.Group[0] * l.Group[1] * l.Group[2]; n > 1024 {
			return nil, fmt.Errorf("mslemu: launch %d of %s: %d threads per threadgroup (at most 1024)", i, p.kernels[l.Kernel].Name, n)
		}
		fmt.Fprintf(&stdin, "%d %d %d %d %d %d %d %d %s %d", l.Kernel, g[0], g[1], g[2], l.Group[0], l.Group[1], l.Group[2], disp, paths[i], len(l.Buffers))
		for _, b := range l.Buffers {
			fmt.Fprintf(&stdin, " %d", len(b))
		}
		stdin.WriteString("\n")
	}
	cmd := exec.CommandContext(ctx, p.bin)
	cmd.Stdin = &stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	sc := bufio.NewScanner(bytes.NewReader(out))
	res := make([]Result, 0, len(ls))
	for sc.Scan() && len(res) < len(ls) {
		line := sc.Text()
		r := Result{}
		if rest, ok := strings.CutPrefix(line, "ok "); ok {
			r.Shared, _ = strconv.Atoi(rest)
		} else {
			r.Err = errors.New(strings.TrimPrefix(line, "fail "))
		}
		l := ls[len(res)]
		raw, rerr := os.ReadFile(paths[len(res)] + ".out")
		if rerr != nil {
			return nil, fmt.Errorf("mslemu: %w", rerr)
		}
		for j := range l.Buffers {
			n := len(l.Buffers[j])
			l.Buffers[j], raw = raw[:n:n], raw[n:]
		}
		res = append(res, r)
	}
	for _, path := range paths {
		os.Remove(path)
		os.Remove(path + ".out")
	}
	if err != nil || len(res) < len(ls) {
		at := len(res)
		name := "?"
		if at < len(ls) {
			name = p.kernels[ls[at].Kernel].Name
		}
		return res, fmt.Errorf("mslemu: the program stopped in launch %d (%s): %v\n%s", at, name, err, firstErrors(stderr.Bytes(), 20))
	}
	return res, nil
}
