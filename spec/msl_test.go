package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// exampleSpecs compiles every spec in examples/, and the spec that
// `kerntune import-variants` makes of each variants manifest there (with
// m1_gemv.json as the template, as its doc suggests).
func exampleSpecs(t *testing.T) map[string]*Compiled {
	t.Helper()
	files, err := filepath.Glob(examplePath("*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*Compiled{}
	for _, f := range files {
		name := filepath.Base(f)
		c, err := Load(f)
		if err == nil {
			out[name] = c
			continue
		}
		data, rerr := os.ReadFile(f)
		if rerr != nil {
			t.Fatal(rerr)
		}
		vs, merr := ParseManifest(data, name)
		if merr != nil {
			t.Fatalf("%s is neither a spec (%v) nor a variants manifest (%v)", name, err, merr)
		}
		s, _, err := ImportVariants(vs, name, ImportOptions{Name: "imported", Template: loadExample(t, "m1_gemv.json").Spec})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err = json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if out[name], err = Parse(data, examplePath("imported.json")); err != nil {
			t.Fatalf("%s imported: %v", name, err)
		}
	}
	for _, name := range examples {
		if out[name] == nil {
			t.Fatalf("examples/%s not found", name)
		}
	}
	return out
}

// mslOf generates the MSL of every candidate of c, each dtype; a
// shape-dependent body's on each of its shapes and odd shapes that accept
// the candidate, each distinct source once.
func mslOf(t *testing.T, label string, c *Compiled) []mslcheck.Source {
	t.Helper()
	if !slices.Contains(c.APIs, gpu.Metal) {
		return nil
	}
	shapes := [][]int{nil}
	if c.Body.ShapeDependent() {
		shapes = nil
		for _, cs := range append(slices.Clone(c.Kernel.Workload), c.Kernel.Odd...) {
			shapes = append(shapes, cs.Shape)
		}
	}
	ps, _ := c.Kernel.Space("gpu")
	seen := map[string]bool{}
	var srcs []mslcheck.Source
	for _, dt := range c.DTypes() {
		for _, cand := range c.Space().Enumerate() {
			for _, shape := range shapes {
				if shape != nil && ps.Check(shape, cand) != nil {
					continue
				}
				src, err := c.Body.SourceForShape(gpu.Metal, dt, cand, shape)
				if err != nil {
					t.Fatalf("%s %s %s %v: %v", label, dt, cand.Key(), shape, err)
				}
				fn, err := c.Body.FuncNameForShape(dt, cand, shape)
				if err != nil {
					t.Fatal(err)
				}
				if seen[src] {
					continue
				}
				seen[src] = true
				srcs = append(srcs, mslcheck.Source{Name: fmt.Sprintf("%s %s %s %v", label, dt, cand.Key(), shape), Func: fn, Text: gpu.ForSyntaxCheck(src)})
			}
		}
	}
	return srcs
}

// Every candidate of every example spec, bodies and the raw .metal file
// alike, opens with the include (no #define before it) and passes both MSL
// checks: syntax and address spaces.
func TestExamplesMSL(t *testing.T) {
	chk, err := mslcheck.New(mslcheck.Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	specs := exampleSpecs(t)
	var srcs []mslcheck.Source
	names := slices.Sorted(maps.Keys(specs))
	withMSL := 0
	for _, name := range names {
		s := mslOf(t, name, specs[name])
		if len(s) > 0 {
			withMSL++
		}
		srcs = append(srcs, s...)
	}
	if withMSL < len(examples) {
		t.Fatalf("only %d example specs have MSL", withMSL)
	}
	for _, s := range srcs {
		if err := mslcheck.IncludeFirst(s.Text); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	chk.CheckModes(t, srcs, 400, func(mode mslcheck.Mode, runs int, took time.Duration) string {
		return fmt.Sprintf("MSL %s check: %d candidates of %d example specs checked (%s; f32 and f16; %d clang runs, %s)",
			mode, len(srcs), withMSL, strings.Join(names, ", "), runs, took)
	})
}

// A spec parameter named N, as a template parameter of Apple's headers (and
// of the stand-in's) is named, compiles: the include comes before the
// parameter #defines, in a body and in a raw .metal file. Each source is
// checked alone, as Metal compiles it; the same source with the defines
// moved before the include (the order kerntune once generated) fails.
func TestParamNamedLikeAHeaderName(t *testing.T) {
	t.Parallel()
	chk, err := mslcheck.New(mslcheck.Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	raw := `#include <metal_stdlib>
using namespace metal;
#if KT_F16
typedef half elem;
#else
typedef float elem;
#endif
[[max_total_threads_per_threadgroup(NTHREADS)]] kernel void kt_scale_n(
    device const elem* x [[buffer(0)]], device elem* y [[buffer(1)]], constant int& rows [[buffer(2)]],
    constant int& cols [[buffer(3)]], uint3 tid [[thread_position_in_threadgroup]], uint3 gid [[threadgroup_position_in_grid]]) {
  const int base = int(gid.x) * (NTHREADS * N);
  for (int e = 0; e < N; ++e) {
    const int i = base + e * NTHREADS + int(tid.x);
    if (i < rows * cols) y[i] = elem(2.0f * float(x[i]));
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "scale_n.metal"), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(source string) string {
		return `{
  "name": "scale_n",
  "dims": ["rows", "cols"],
  "source": ` + source + `,
  "buffers": [{"name": "x", "io": "in", "length": "rows * cols"}, {"name": "y", "io": "out", "length": "rows * cols"}],
  "scalars": [{"name": "rows", "type": "int", "value": "rows"}, {"name": "cols", "type": "int", "value": "cols"}],
  "params": [{"name": "TG", "values": [64, 256]}, {"name": "N", "values": [1, 4], "doc": "elements per thread"}],
  "launch": {"threads": "TG", "grid": ["cdiv(rows * cols, TG * N)"]},
  "shapes": [[4, 1000]],
  "reference": {"expr": "2 * x[i]"}
}`
	}
	for _, tt := range []struct{ name, source string }{
		{"body", `{"function": "kt_scale_n", "body": [
      "for (int e = 0; e < N; ++e) {",
      "  const int i = GROUP_X * (NTHREADS * N) + e * NTHREADS + LID;",
      "  if (i < rows * cols) STORE(y, i, 2.0f * LOAD(x, i));",
      "}"]}`},
		{"raw metal_file", `{"function": "kt_scale_n", "metal_file": "scale_n.metal"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(spec(tt.source)), filepath.Join(dir, "scale_n.json"))
			if err != nil {
				t.Fatal(err)
			}
			srcs := mslOf(t, "scale_n "+tt.name, c)
			if len(srcs) != 8 {
				t.Fatalf("%d sources, want 2 TG × 2 N × 2 dtypes", len(srcs))
			}
			for _, s := range srcs {
				if !strings.Contains(s.Text, "\n#define N ") {
					t.Fatalf("%s: N is not #defined:\n%s", s.Name, s.Text)
				}
				if err := mslcheck.IncludeFirst(s.Text); err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				for _, mode := range mslcheck.Modes {
					if err := chk.CheckText(mode, s.Name, s.Text); err != nil {
						t.Errorf("%s check: %v", mode, err)
					}
				}
			}
			// The old order: parameters first, then the include (the
			// prelude's, or the raw file's own). N then rewrites the
			// stand-in's template <typename T, int N>, and the checks fail.
			const inc = "#include <metal_stdlib>\nusing namespace metal;\n"
			old := strings.Replace(srcs[0].Text, inc, "", 1)
			if tt.name == "body" {
				old = strings.Replace(old, "typedef ", inc+"typedef ", 1)
			}
			if i := strings.Index(old, inc); i < 0 || strings.Index(old, "#define N ") > i {
				t.Fatalf("could not rebuild the old order:\n%s", old)
			}
			for _, mode := range mslcheck.Modes {
				if err := chk.CheckText(mode, "old order", old); err == nil || !strings.Contains(err.Error(), "expanded from macro 'N'") {
					t.Errorf("%s check: a #define N before the include should fail in the header: %v", mode, err)
				}
			}
		})
	}
}

// exampleDoc is an example spec's bytes and its JSON, to edit.
func exampleDoc(t *testing.T, name string) ([]byte, map[string]any) {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	return orig, doc
}

// Locate maps a line of a generated source back to the user's text: the
// line of the spec's JSON for a body written there (an array of lines or
// one string), the line of the body file otherwise; a line kerntune
// generated maps to nothing.
func TestLocate(t *testing.T) {
	orig, doc := exampleDoc(t, "swiglu.json")
	var lines []string
	for _, l := range doc["source"].(map[string]any)["body"].([]any) {
		lines = append(lines, l.(string))
	}
	body := strings.Join(lines, "\n")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withSource := func(src map[string]any) []byte {
		doc["source"] = src
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	arrayLine := 1 + strings.Count(string(orig[:strings.Index(string(orig), "const int total")]), "\n")
	asString := withSource(map[string]any{"function": "kt_swiglu", "body": body})
	stringLine := 1 + strings.Count(string(asString[:strings.Index(string(asString), `"body"`)]), "\n")
	write("swiglu.body", []byte(body))
	tests := []struct {
		name, spec, field, file string
		fileLine                int
	}{
		{"array of lines", write("array.json", orig), "source.body", "array.json", arrayLine},
		{"one string", write("string.json", asString), "source.body", "string.json", stringLine},
		{"body file", write("file.json", withSource(map[string]any{"function": "kt_swiglu", "body_file": "swiglu.body"})), "source.body_file", "swiglu.body", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp, err := Load(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			src, err := cp.Body.SourceFor(gpu.Metal, kernels.F32, cp.Space().Enumerate()[0])
			if err != nil {
				t.Fatal(err)
			}
			gen := strings.Split(src, "\n")
			n := 1 + slices.IndexFunc(gen, func(l string) bool { return strings.Contains(l, "const int total") })
			o, ok := cp.Locate(src, n)
			want := Origin{Field: tt.field, Line: 2, File: filepath.Join(dir, tt.file), FileLine: tt.fileLine, Text: "  const int total = rows * cols;"}
			if !ok || o != want {
				t.Errorf("Locate(line %d) = %+v, %v; want %+v", n, o, ok, want)
			}
			if o, ok := cp.Locate(src, 1); ok {
				t.Errorf("a generated line located at %+v", o)
			}
		})
	}
}
