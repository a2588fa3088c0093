package metal

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/spec"
)

func TestLaunchSizes(t *testing.T) {
	tests := []struct {
		name            string
		l               gpu.Launch
		size, perGroup  mtlSize
		threads, failed bool
	}{
		{"threadgroups", gpu.Launch{Grid: [2]int{37, 5}, Threads: 256}, mtlSize{Width: 37, Height: 5, Depth: 1}, mtlSize{Width: 256, Height: 1, Depth: 1}, false, false},
		{"MLX threads", gpu.Launch{Grid: [2]int{4, 3}, Threads: 64, ThreadGrid: [3]int{1000, 24, 1}, Group: [3]int{32, 2, 1}},
			mtlSize{Width: 1000, Height: 24, Depth: 1}, mtlSize{Width: 32, Height: 2, Depth: 1}, true, false},
		{"empty", gpu.Launch{Grid: [2]int{0, 1}, Threads: 32}, mtlSize{}, mtlSize{}, false, true},
		{"empty MLX z", gpu.Launch{ThreadGrid: [3]int{8, 1, 0}, Group: [3]int{8, 1, 1}}, mtlSize{}, mtlSize{}, false, true},
	}
	for _, tt := range tests {
		size, perGroup, threads, err := launchSizes(tt.l)
		if (err != nil) != tt.failed || size != tt.size || perGroup != tt.perGroup || threads != tt.threads {
			t.Errorf("%s: %+v %+v %v %v", tt.name, size, perGroup, threads, err)
		}
	}
}

func TestBytesArgs(t *testing.T) {
	args := []gpu.Arg{{Name: "x", Kind: gpu.In}, {Name: "x_shape", Kind: gpu.Bytes}, {Name: "y", Kind: gpu.Out}, {Name: "n", Kind: gpu.Bytes}}
	got, err := bytesArgs(args, [][]byte{{1, 0, 0, 0}, {2, 0, 0, 0, 0, 0, 0, 0}})
	if err != nil || len(got) != 2 || got[0].index != 1 || got[1].index != 3 || len(got[1].data) != 8 {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, bad := range [][][]byte{nil, {{1}}, {{1}, {2}, {3}}, {{}, {1}}, {{1}, make([]byte, 4097)}} {
		if _, err := bytesArgs(args, bad); err == nil {
			t.Errorf("%d contents accepted", len(bad))
		}
	}
	if got, err := bytesArgs([]gpu.Arg{{Name: "x", Kind: gpu.In}}, nil); err != nil || len(got) != 0 {
		t.Errorf("no Bytes arguments: %v, %v", got, err)
	}
}

// An MLX kernel is dispatched as threads, MLX's grid, and every argument is
// bound at the [[buffer(i)]] index of MLX's signature: data by setBuffer,
// constants and shapes by setBytes.
func TestMLXKernelBinding(t *testing.T) {
	c, err := spec.Load(filepath.Join("..", "..", "examples", "mlx_qr_col_dot.json"))
	if err != nil {
		t.Fatal(err)
	}
	cand := map[string]int{"TG": 128, "UNROLL": 2}
	size, perGroup, threads, err := launchSizes(c.Body.Geometry([]int{4096, 1000}, cand))
	if err != nil || !threads || size != (mtlSize{Width: 1024, Height: 1, Depth: 1}) || perGroup != (mtlSize{Width: 128, Height: 1, Depth: 1}) {
		t.Fatalf("launch %+v %+v threads=%v %v", size, perGroup, threads, err)
	}
	src, err := c.Body.SourceFor(gpu.Metal, kernels.F32, cand)
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^  .* (\w+) \[\[buffer\((\d+)\)\]\]`)
	index := map[string]int{}
	for _, m := range decl.FindAllStringSubmatch(src, -1) {
		index[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(index) != len(c.Body.Args) {
		t.Fatalf("%d buffer arguments in the source, %d Args", len(index), len(c.Body.Args))
	}
	for i, a := range c.Body.Args {
		if index[a.Name] != i {
			t.Errorf("argument %s is bound at %d but declared at [[buffer(%d)]]", a.Name, i, index[a.Name])
		}
	}
	bound, err := bytesArgs(c.Body.Args, c.Body.Consts(kernels.Case{Shape: []int{4096, 1000}}))
	// The constant shape is an input buffer, as MLX binds every array;
	// this body names no <name>_shape, so nothing is bound with setBytes.
	if err != nil || len(bound) != 0 || c.Body.Args[index["shape"]].Kind != gpu.In {
		t.Fatalf("bound %+v, %v; shape bound as %v", bound, err, c.Body.Args[index["shape"]].Kind)
	}
	if !strings.Contains(src, "[[host_name(\""+c.Body.FuncName(kernels.F32, cand)+"\")]]") {
		t.Fatal("the pipeline's function name is not the kernel's host name")
	}
}
