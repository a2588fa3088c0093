package mslstd_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/mslemu"
	"github.com/kerntune/kerntune/internal/mslstd"
)

// The committed headers are what the table generates now: edit the table
// and run go generate ./internal/mslstd.
func TestGeneratedFilesCurrent(t *testing.T) {
	for _, f := range mslstd.Files {
		got, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if want := mslstd.Generate(f.Target, f.Part); !bytes.Equal(got, want) {
			t.Errorf("%s differs from what internal/mslstd generates: run go generate ./internal/mslstd", f.Path)
		}
	}
}

// Both check stand-ins include one vector-types file: the table must give
// them the same text.
func TestCheckTypesShared(t *testing.T) {
	if !bytes.Equal(mslstd.Generate(mslstd.CPP, "types"), mslstd.Generate(mslstd.OpenCL, "types")) {
		t.Fatal("the syntax and address-space stand-ins need different vector types now: generate a metal_types.h for each (Files)")
	}
}

const head = "#include <metal_stdlib>\nusing namespace metal;\n"

// everyEntry is a kernel that calls every function of the table once, each
// argument a 1 of its type (an out parameter a local variable), and every
// atomic operation on device memory.
func everyEntry() string {
	var b, bf strings.Builder
	for i, e := range mslstd.Entries() {
		w := &b
		if e.Scalar == "bfloat" {
			w = &bf
		}
		var decls, args []string
		for j, a := range e.Args {
			if out, ok := strings.CutPrefix(a, "thread "); ok {
				ty := strings.TrimSuffix(out, "&")
				decls = append(decls, fmt.Sprintf("%s o%d = %s(1);", ty, j, ty))
				args = append(args, fmt.Sprintf("o%d", j))
				continue
			}
			one := "1"
			if strings.HasPrefix(a, "bool") {
				one = "true"
			}
			args = append(args, fmt.Sprintf("%s(%s)", a, one))
		}
		fmt.Fprintf(w, "  { %s (void)%s::%s(%s); } // %d\n", strings.Join(decls, " "), e.NS, e.Name, strings.Join(args, ", "), i)
	}
	for _, a := range mslstd.Atomic {
		for _, s := range strings.Fields(a.Types) {
			p := map[string]string{"int": "ai", "uint": "au", "float": "af"}[s]
			var call string
			switch {
			case strings.Contains(a.Name, "load"):
				call = fmt.Sprintf("%s(%s, memory_order_relaxed)", a.Name, p)
			case strings.Contains(a.Name, "compare_exchange"):
				call = fmt.Sprintf("{ %s e = %s(1); %s(%s, &e, %s(2), memory_order_relaxed, memory_order_relaxed); }", s, s, a.Name, p, s)
			default:
				call = fmt.Sprintf("%s(%s, %s(1), memory_order_relaxed)", a.Name, p, s)
			}
			fmt.Fprintf(&b, "  %s;\n", call)
		}
	}
	return head + "kernel void every(device float* out [[buffer(0)]], device atomic_int* ai [[buffer(1)]],\n" +
		"    device atomic_uint* au [[buffer(2)]], device atomic<float>* af [[buffer(3)]]) {\n" +
		b.String() + "#if defined(__HAVE_BFLOAT__)\n" + bf.String() + "#endif\n  out[0] = 1.0f;\n}\n"
}

// Every entry of the table compiles in both clang check modes and in the
// emulation, and runs there.
func TestEveryEntryCompiles(t *testing.T) {
	cc := mslcheck.Require(t)
	src := everyEntry()
	if n := strings.Count(src, "::"); n < 3000 {
		t.Fatalf("the kernel makes %d calls: the table lost entries", n)
	}
	chk, err := mslcheck.New(cc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Three compiles of one large kernel, side by side.
	for _, mode := range mslcheck.Modes {
		t.Run(fmt.Sprint("check ", mode), func(t *testing.T) {
			t.Parallel()
			if err := chk.CheckText(mode, "every entry", src); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("emulation", func(t *testing.T) {
		t.Parallel()
		emulateEveryEntry(t, cc, src)
	})
}

// emulateEveryEntry compiles the kernel src in the emulation and runs it.
func emulateEveryEntry(t *testing.T, cc, src string) {
	// The emulation declares bfloat always; the kernel's bfloat calls are
	// taken where the caller defines __HAVE_BFLOAT__, as Metal 3.1 does.
	emuSrc := strings.Replace(src, head, head+"#define __HAVE_BFLOAT__ 1\n", 1)
	p, err := mslemu.BuildUnoptimized(context.Background(), cc, t.TempDir(), []mslemu.Kernel{{Name: "every entry", Source: emuSrc, Func: "every",
		Args: []mslemu.Arg{mslemu.Buf(0), mslemu.Buf(1), mslemu.Buf(2), mslemu.Buf(3)}}})
	if err != nil {
		t.Fatal(err)
	}
	l := &mslemu.Launch{Groups: [3]int{1, 1, 1}, Group: [3]int{32, 1, 1}, Buffers: [][]byte{make([]byte, 4), make([]byte, 4), make([]byte, 4), make([]byte, 4)}}
	res, err := p.Run(context.Background(), []*mslemu.Launch{l})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(l.Buffers[0])); got != 1 {
		t.Fatalf("out[0] = %v after the run, want 1", got)
	}
}

// Calls Metal finds ambiguous are ambiguous in the check; their unambiguous
// forms are accepted.
func TestAmbiguousOverloads(t *testing.T) {
	chk, err := mslcheck.New(mslcheck.Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		expr      string
		ambiguous bool
	}{
		{"min(uint(1), int(2))", true},
		{"max(half(1), 0.5f)", true},
		{"min(uint(1), uint(2))", false},
		{"max(half(1), half(0.5f))", false},
		{"max(float(half(1)), 0.5f)", false},
		{"clamp(int2(1), int2(0), int2(3)).x", false},
	} {
		src := head + fmt.Sprintf("kernel void k(device float* out [[buffer(0)]]) {\n  out[0] = float(%s);\n}\n", c.expr)
		for _, mode := range mslcheck.Modes {
			err := chk.CheckText(mode, c.expr, src)
			switch {
			case c.ambiguous && (err == nil || !strings.Contains(err.Error(), "ambiguous")):
				t.Errorf("%s, %s check: want an ambiguous call, got %v", c.expr, mode, err)
			case !c.ambiguous && err != nil:
				t.Errorf("%s, %s check: %v", c.expr, mode, err)
			}
		}
	}
}

// The declarations follow the checker's language version: bfloat from MSL
// 3.1 (the checker takes 3.0 and later, so atomic<float>, from 3.0, is
// always there).
func TestLanguageVersion(t *testing.T) {
	cc := mslcheck.Require(t)
	for _, c := range []struct {
		version string
		body    string
		ok      bool
	}{
		{"3.1", "bfloat2 b = bfloat2(1.0f); out[0] = float(dot(b, b));", true},
		{"3.0", "bfloat2 b = bfloat2(1.0f); out[0] = float(dot(b, b));", false},
		{"3.0", "atomic_fetch_add_explicit(af, 1.0f, memory_order_relaxed);", true},
	} {
		chk, err := mslcheck.NewVersion(cc, t.TempDir(), c.version)
		if err != nil {
			t.Fatal(err)
		}
		src := fmt.Sprintf("%skernel void k(device float* out [[buffer(0)]], device atomic<float>* af [[buffer(1)]]) {\n  %s\n}\n", head, c.body)
		for _, mode := range mslcheck.Modes {
			if err := chk.CheckText(mode, "version", src); (err == nil) != c.ok {
				t.Errorf("MSL %s, %s check of %q: accepted %v, want %v (%v)", c.version, mode, c.body, err == nil, c.ok, err)
			}
		}
	}
}
