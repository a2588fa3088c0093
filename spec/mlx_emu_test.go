package spec

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/cover"
	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/kernels"
)

// emuCase is one example candidate run on one shape.
type emuCase struct {
	example string
	cand    map[string]int
	shape   []int
	dt      kernels.DType // "": f32
	options []string
	// edit breaks the body (the check must then fail verification)
	edit func(string) string
	// template rebinds template arguments to other expressions (a broken
	// spec: verification must fail)
	template map[string]string
}

// The MLX examples compute what their float64 references say when their
// generated sources run under MLX's launch (grid in threads, threadgroups
// of min(threadgroup, grid)), emulated on the CPU (internal/mslemu): the
// kernels are checked for results, not only for syntax, off a Mac.
func TestMLXExamplesComputeOnCPU(t *testing.T) {
	t.Parallel()
	cc := mslcheck.Require(t)
	type m = map[string]int
	cases := []emuCase{
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 32, "UNROLL": 4}, shape: []int{33, 7}},
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 64, "UNROLL": 8}, shape: []int{130, 29}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 32, "BN": 8, "BK": 16}, shape: []int{37, 53, 29}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 8, "BN": 16, "BK": 32}, shape: []int{130, 7, 65}},
		// Packed uint32 weights, per-group scales and biases.
		{example: "mlx_qmv4.json", cand: m{"TPR": 8, "ROWS": 4}, shape: []int{9, 128}},
		{example: "mlx_qmv4.json", cand: m{"TPR": 4, "ROWS": 2}, shape: []int{33, 192}, dt: kernels.F16},
		{example: "mlx_qmv4.json", cand: m{"TPR": 16, "ROWS": 1}, shape: []int{33, 192}, dt: kernels.BF16},
		// Atomic outputs of two types, filled with init_value first.
		{example: "mlx_scatter_add.json", cand: m{"TG": 64, "ITEMS": 2}, shape: []int{1000, 7}},
		{example: "mlx_scatter_add.json", cand: m{"TG": 128, "ITEMS": 1}, shape: []int{77, 3}},
		// Two outputs (the second float32 in f16 too), a template dtype,
		// MLX's elem_to_loc on a transposed view of x.
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{3, 37}},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 64}, shape: []int{5, 100}, dt: kernels.F16},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{5, 100}, options: []string{stridedOption}},
		// The row length is a template argument from the shape (D = d) and
		// the row count a format placeholder: two shapes, two kernels; a
		// 4-element x is passed in the constant address space, the scale
		// is 0-d.
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 32}, shape: []int{37, 29}},
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 64}, shape: []int{3, 5}, dt: kernels.F16},
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 32}, shape: []int{1, 4}},
		{example: "mlx_exp1d.json", cand: m{"TG": 64}, shape: []int{1000}},
		{example: "mlx_exp1d.json", cand: m{"TG": 256}, shape: []int{8}, dt: kernels.F16},
		{example: "mlx_add_one.json", cand: m{"TG": 64}, shape: []int{1000}},
		{example: "mlx_add1d.json", cand: m{"TG": 32}, shape: []int{77}, dt: kernels.F16},
		{example: "mlx_divmap.json", cand: m{"TG": 64}, shape: []int{37, 29}},
		{example: "mlx_twod.json", cand: m{"TX": 8, "TY": 4}, shape: []int{37, 29}},
		{example: "mlx_twod.json", cand: m{"TX": 16, "TY": 2}, shape: []int{3, 7}, dt: kernels.F16},
		// Teeth: without the tail loop the last rows of Q are dropped;
		// staging A without the slice offset k0 multiplies the first slice
		// of A with every slice of V; nibbles read from the wrong end, all
		// counts in one bin, and a view read as if row-contiguous fail.
		{example: "mlx_qr_col_dot.json", cand: m{"TG": 32, "UNROLL": 4}, shape: []int{33, 7}, edit: func(s string) string {
			return strings.Replace(s, "for (; i < m; ++i) {", "for (; false; ++i) {", 1)
		}},
		{example: "mlx_gemm_av.json", cand: m{"BM": 16, "BN": 16, "BK": 8}, shape: []int{37, 53, 29}, edit: func(s string) string {
			return strings.Replace(s, "A[(row0 + r) * k + k0 + c]", "A[(row0 + r) * k + c]", 1)
		}},
		{example: "mlx_qmv4.json", cand: m{"TPR": 8, "ROWS": 4}, shape: []int{9, 128}, edit: func(s string) string {
			return strings.Replace(s, "(q >> (4 * j))", "(q >> (4 * (7 - j)))", 1)
		}},
		{example: "mlx_scatter_add.json", cand: m{"TG": 64, "ITEMS": 2}, shape: []int{1000, 7}, edit: func(s string) string {
			return strings.Replace(s, "&counts[b]", "&counts[0]", 1)
		}},
		// A 2D index with the wrong row length leaves elements unwritten;
		// the column taken modulo the wrong extent reads the wrong input.
		{example: "mlx_twod.json", cand: m{"TX": 8, "TY": 4}, shape: []int{3, 7}, edit: func(s string) string {
			return strings.Replace(s, "uint idx = g.y * k + g.x;", "uint idx = g.y * n + g.x;", 1)
		}},
		{example: "mlx_divmap.json", cand: m{"TG": 64}, shape: []int{3, 7}, edit: func(s string) string {
			return strings.Replace(s, "uint col = gid % k;", "uint col = gid % n;", 1)
		}},
		// A row length from the wrong dim (D = n) sums the wrong elements.
		{example: "mlx_rowsum_dh.json", cand: m{"TG": 32}, shape: []int{29, 37}, template: map[string]string{"D": "n"}},
		{example: "mlx_rmsnorm_inv.json", cand: m{"TG": 32}, shape: []int{5, 100}, options: []string{stridedOption}, edit: func(s string) string {
			return strings.ReplaceAll(s, "x[elem_to_loc(int64_t(row * cols + c), x_shape, x_strides, x_ndim)]", "x[row * cols + c + 0 * x_shape[0] * x_strides[0] * x_ndim]")
		}},
	}
	runEmuCases(t, cc, cases)
}

// runEmuCases runs each case's candidate on its shape through the
// emulation against the spec's reference: a case without a break must
// pass, one with a broken body or template must fail.
func runEmuCases(t *testing.T, cc string, cases []emuCase) {
	t.Helper()
	runs := make([]EmulateRun, len(cases))
	for i, ec := range cases {
		c := loadExample(t, ec.example)
		if ec.template != nil {
			c = rebindTemplate(t, ec.example, ec.template)
		}
		if ec.edit != nil {
			m := *c.Body.MLX
			m.Source = ec.edit(m.Source)
			if m.Source == c.Body.MLX.Source {
				t.Fatalf("case %d: the edit changed nothing", i)
			}
			body := *c.Body
			body.MLX = &m
			edited := *c
			edited.Body = &body
			c = &edited
		}
		dt := ec.dt
		if dt == "" {
			dt = kernels.F32
		}
		cs := kernels.Case{Shape: ec.shape, Options: ec.options}
		runs[i] = EmulateRun{DType: dt, Candidate: ec.cand, Case: cs, Shape: cs.String(), spec: c}
	}
	if err := emulateRuns(context.Background(), cc, t.TempDir(), 7, runs); err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		ec := cases[i]
		switch {
		case ec.edit == nil && ec.template == nil && r.Err != nil:
			t.Errorf("%s %s %v on %s: %v", ec.example, r.DType, ec.cand, r.Shape, r.Err)
		case (ec.edit != nil || ec.template != nil) && r.Err == nil:
			t.Errorf("%s %v on %s: a broken body passed verification", ec.example, ec.cand, r.Shape)
		case ec.edit != nil || ec.template != nil:
			t.Logf("%s %v on %s, broken body: %v", ec.example, ec.cand, r.Shape, r.Err)
		default:
			t.Logf("%s %s %v on %s: verified", ec.example, r.DType, ec.cand, r.Shape)
		}
	}
}

// Emulate runs a covering sample of an mlx spec's candidates in each of
// its dtypes on every verification shape (views too where the kernel reads
// strides), and every candidate with EmulateAll; a body with a wrong index
// fails on every candidate it runs, and the report names them.
func TestEmulate(t *testing.T) {
	t.Parallel()
	cc := mslcheck.Require(t)
	good := loadExample(t, "mlx_twod.json")
	broken := loadExample(t, "mlx_twod.json")
	m := *broken.Body.MLX
	m.Source = strings.Replace(m.Source, "uint idx = g.y * k + g.x;", "uint idx = g.y * n + g.x;", 1)
	body := *broken.Body
	body.MLX = &m
	broken.Body = &body
	tests := []struct {
		name   string
		c      *Compiled
		opts   EmulateOptions
		failed bool
	}{
		{"cover", good, EmulateOptions{Clang: cc, Candidates: 2, DTypes: []kernels.DType{kernels.F32}}, false},
		{"broken", broken, EmulateOptions{Clang: cc, Candidates: 2, DTypes: []kernels.DType{kernels.F16}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := tt.c.Emulate(context.Background(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.DTypes) != 1 || rep.DTypes[0].Candidates != 2 || rep.DTypes[0].Shapes != len(tt.c.Kernel.Odd) {
				t.Fatalf("report %+v: want one dtype, 2 candidates on the %d verification shapes", rep.DTypes, len(tt.c.Kernel.Odd))
			}
			d := rep.DTypes[0]
			fails := rep.Failures()
			if tt.failed {
				if d.Failed != 2 || d.Passed != 0 || len(fails) == 0 || fails[0].Error == "" {
					t.Fatalf("broken body: %+v, failures %+v", d, fails)
				}
				return
			}
			if d.Passed != 2 || len(fails) > 0 {
				t.Fatalf("%+v: %+v", d, fails)
			}
		})
	}
}

// A source the emulation cannot compile fails its own runs only (its batch
// is split until it is alone), and a launch that crashes the program fails
// alone while the launches after it still run.
func TestEmulateIsolatesFailures(t *testing.T) {
	t.Parallel()
	cc := mslcheck.Require(t)
	edited := func(from, to string) *Compiled {
		c := loadExample(t, "mlx_exp1d.json")
		m := *c.Body.MLX
		m.Source = strings.Replace(m.Source, from, to, 1)
		if m.Source == c.Body.MLX.Source {
			t.Fatalf("the edit of %q changed nothing", from)
		}
		b := *c.Body
		b.MLX = &m
		c.Body = &b
		return c
	}
	good := loadExample(t, "mlx_exp1d.json")
	tests := []struct {
		c    *Compiled
		want string // in the run's error; empty: passes
	}{
		{edited("exp(a[tid])", "exp(nope[tid])"), "cannot compile the source: use of undeclared identifier 'nope'"},
		{edited("out[tid] = exp(a[tid]);", "out[tid + 0x7fffffffu] = exp(a[tid]);"), "crashed"},
		{good, ""},
	}
	cs := kernels.Case{Shape: []int{1000}}
	runs := make([]EmulateRun, len(tests))
	for i, tt := range tests {
		runs[i] = EmulateRun{DType: kernels.F32, Candidate: map[string]int{"TG": 64}, Case: cs, Shape: cs.String(), spec: tt.c}
	}
	if err := emulateRuns(context.Background(), cc, t.TempDir(), 1, runs); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		err := runs[i].Err
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("run %d: %v", i, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("run %d: error %v, want one mentioning %q", i, err, tt.want)
		}
	}
}

// With KTDEV_FULL (make test-full), every mlx example's covering sample
// (every pair of parameter values, in every dtype) passes the emulated
// verification on every verification shape; make test runs the chosen
// cases of TestMLXExamplesComputeOnCPU instead.
func TestEmulateExamplesFull(t *testing.T) {
	if !cover.Full() {
		t.Skipf("the whole emulated sweep of the mlx examples runs with %s=1", cover.FullEnv)
	}
	cc := mslcheck.Require(t)
	files, err := filepath.Glob(examplePath("mlx_*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no mlx examples: %v", err)
	}
	for _, f := range files {
		c := loadExample(t, filepath.Base(f))
		rep, err := c.Emulate(context.Background(), EmulateOptions{Clang: cc, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Failures() {
			t.Errorf("%s %s %s on %s: %v", filepath.Base(f), r.DType, r.Candidate.Key(), r.Shape, r.Err)
		}
		for _, d := range rep.DTypes {
			if d.Candidates == 0 || d.Passed != d.Candidates {
				t.Errorf("%s %s: %d of %d candidates passed", filepath.Base(f), d.DType, d.Passed, d.Candidates)
			}
		}
	}
}

// rebindTemplate loads an example with some template arguments bound to
// other expressions.
func rebindTemplate(t *testing.T, example string, exprs map[string]string) *Compiled {
	t.Helper()
	data, err := os.ReadFile(examplePath(example))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(data, examplePath(example))
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for i, a := range s.Source.MLX.Template {
		if e, ok := exprs[a.Name]; ok {
			s.Source.MLX.Template[i].Value, _ = json.Marshal(e)
			changed++
		}
	}
	if changed != len(exprs) {
		t.Fatalf("%s: template has not all of %v", example, exprs)
	}
	c, err := compile(s, examplePath(example), filepath.Dir(examplePath(example)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
