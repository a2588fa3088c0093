package spec

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// withMetalVersion writes example name with source.mlx.metal_version v
// (and its source files) to a temporary directory and loads it.
func withMetalVersion(t *testing.T, name, v string, edit func(doc map[string]any)) (*Compiled, error) {
	t.Helper()
	_, doc := exampleDoc(t, name)
	doc["source"].(map[string]any)["mlx"].(map[string]any)["metal_version"] = v
	if edit != nil {
		edit(doc)
	}
	dir := t.TempDir()
	files, _ := filepath.Glob("../examples/*.metal")
	for _, f := range files {
		testutil.WriteFile(t, dir, filepath.Base(f), string(testutil.ReadFile(t, f)))
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

// A metal_version below what the kernel's types need is refused, naming
// the field and the need; the version they need is accepted.
func TestMLXMetalVersionNeed(t *testing.T) {
	onlyF32 := func(doc map[string]any) { doc["dtypes"] = []string{"f32"} }
	for _, tt := range []struct {
		name, example, version string
		edit                   func(map[string]any)
		err                    string
	}{
		{"bf16 dtype below 3.1", "mlx_qmv4.json", "3.0", nil, "source.mlx.metal_version: is 3.0, but dtype bf16 (bfloat) needs Metal 3.1 or later"},
		{"bf16 dtype at 3.1", "mlx_qmv4.json", "3.1", nil, ""},
		{"bf16 dtype at 4.0", "mlx_qmv4.json", "4.0", nil, ""},
		{"f32 alone at 3.0", "mlx_qmv4.json", "3.0", onlyF32, ""},
		{"a bfloat16 buffer below 3.1", "mlx_qmv4.json", "3.0", func(doc map[string]any) {
			onlyF32(doc)
			doc["buffers"].([]any)[2].(map[string]any)["dtype"] = "bfloat16"
		}, "buffers[2] (scales) of dtype bfloat16 needs Metal 3.1"},
		{"atomic float outputs at 3.0", "mlx_scatter_add.json", "3.0", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := withMetalVersion(t, tt.example, tt.version, tt.edit)
			testutil.WantErr(t, err, tt.err)
		})
	}
	// What needs 3.0: atomic outputs of a float type (atomic<float>).
	c := &compiler{s: &Spec{Source: Source{MLX: &MLXSource{AtomicOutputs: true}}, Buffers: []Buffer{{Name: "out", IO: "out"}}}, outs: []int{0}, elems: make([]kernels.Elem, 1)}
	if need, why := c.mlxVersionNeed(); need != "3.0" || !strings.Contains(why, "atomic<float>") {
		t.Errorf("atomic float outputs need %q (%s), want 3.0", need, why)
	}
	c.s.Source.MLX.AtomicOutputs = false
	if need, why := c.mlxVersionNeed(); need != "" {
		t.Errorf("plain float outputs need %q (%s)", need, why)
	}
}

// MLX's bfloat helpers exist from Metal 3.1 on (__HAVE_BFLOAT__): an f32
// kernel checks at 3.0, a bf16 one only from 3.1, and the static check
// uses the spec's metal_version.
func TestMLXHelpersFollowTheVersion(t *testing.T) {
	cc := mslcheck.Require(t)
	c, err := withMetalVersion(t, "mlx_qmv4.json", "3.0", func(doc map[string]any) { doc["dtypes"] = []string{"f32"} })
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.StaticCheck(context.Background())
	if err != nil || sc.MSL == nil || sc.MSL.MetalVersion != "3.0" || sc.MSL.Passed == 0 {
		t.Fatalf("f32 at Metal 3.0: %+v, %v", sc, err)
	}
	q := loadExample(t, "mlx_qmv4.json")
	cand := q.Space().Enumerate()[0]
	src, err := q.Body.SourceFor(gpu.Metal, kernels.BF16, cand)
	if err != nil {
		t.Fatal(err)
	}
	in := []gpu.MSLSource{{Name: "bf16", Func: q.Body.FuncName(kernels.BF16, cand), Text: src}}
	if _, err := gpu.CheckMSLWith(context.Background(), gpu.MSLCompiler{Clang: cc, Version: "3.1"}, in); err != nil {
		t.Errorf("bf16 at Metal 3.1: %v", err)
	}
	if _, err := gpu.CheckMSLWith(context.Background(), gpu.MSLCompiler{Clang: cc, Version: "3.0"}, in); err == nil || !strings.Contains(err.Error(), "bfloat16_t") {
		t.Errorf("bf16 at Metal 3.0 (no bfloat) should fail on bfloat16_t: %v", err)
	}
}
