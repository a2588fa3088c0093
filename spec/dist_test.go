package spec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
)

// distProblem compiles the probe spec with input Q (m×k) drawn as edit
// says, and returns Q's values on a 40×64 problem.
func distProblem(t *testing.T, edit func(q map[string]any)) ([]float32, error) {
	t.Helper()
	c, err := mlxSpec(t, "out[0] = T(0);", func(d map[string]any) {
		edit(d["buffers"].([]any)[0].(map[string]any))
	})
	if err != nil {
		return nil, err
	}
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{40, 64}}, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	return p.Inputs[0], nil
}

func TestInputDistributions(t *testing.T) {
	const k = 64
	tests := []struct {
		name string
		edit func(q map[string]any)
		// check fails on values the distribution does not give
		check func(v []float32) string
	}{
		{"uniform default", func(q map[string]any) {}, func(v []float32) string {
			return all(v, func(x float32) bool { return x >= -1 && x < 1 })
		}},
		{"uniform range", func(q map[string]any) { q["range"] = []any{"2", "k"} }, func(v []float32) string {
			return all(v, func(x float32) bool { return x >= 2 && x < k })
		}},
		{"normal", func(q map[string]any) { q["dist"] = "normal"; q["range"] = []any{"10", "0.5"} }, func(v []float32) string {
			var s, s2 float64
			for _, x := range v {
				s += float64(x)
				s2 += float64(x) * float64(x)
			}
			mean := s / float64(len(v))
			std := math.Sqrt(s2/float64(len(v)) - mean*mean)
			if math.Abs(mean-10) > 0.05 || math.Abs(std-0.5) > 0.05 {
				return "mean or std off"
			}
			return ""
		}},
		{"int indices", func(q map[string]any) { q["dist"] = "int"; q["range"] = []any{"0", "k - 1"} }, func(v []float32) string {
			if msg := all(v, func(x float32) bool { return x == float32(math.Trunc(float64(x))) && x >= 0 && x <= k-1 }); msg != "" {
				return msg
			}
			if !slices.Contains(v, 0) || !slices.Contains(v, k-1) {
				return "the ends of [lo, hi] are never drawn"
			}
			return ""
		}},
		{"sorted", func(q map[string]any) { q["dist"] = "sorted" }, func(v []float32) string {
			for r := 0; r < len(v); r += k {
				if !slices.IsSorted(v[r : r+k]) {
					return "a row is not sorted"
				}
			}
			if slices.IsSorted(v) {
				return "sorted across rows too (want along the last dim only)"
			}
			return ""
		}},
		{"positive", func(q map[string]any) { q["dist"] = "positive" }, func(v []float32) string {
			return all(v, func(x float32) bool { return x >= 0.5 && x < 2 })
		}},
		{"sorted int32", func(q map[string]any) { q["dist"] = "sorted"; q["dtype"] = "int32"; q["range"] = []any{"-5", "m"} }, func(v []float32) string {
			for r := 0; r < len(v); r += k {
				row := make([]float64, k)
				for i, x := range v[r : r+k] {
					row[i] = kernels.ElemInt32.Value(x)
				}
				if !slices.IsSorted(row) || row[0] < -5 || row[k-1] > 40 {
					return "an int32 row is not sorted in [-5, 40]"
				}
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := distProblem(t, tt.edit)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(v); msg != "" {
				t.Fatal(msg)
			}
			if all(v, func(x float32) bool { return x == 0 }) == "" {
				t.Fatal("all zeros")
			}
			// The same buffer drawn uniform (or refused: a normal's
			// [mean, std] is an empty uniform range) fails the check.
			w, err := distProblem(t, func(q map[string]any) { tt.edit(q); q["dist"] = "uniform" })
			if !strings.HasPrefix(tt.name, "uniform") && err == nil && tt.check(w) == "" {
				t.Fatal("the check passes a uniform draw too: it tests nothing")
			}
		})
	}
}

// all is "" when ok holds for every value, else a message.
func all(v []float32, ok func(float32) bool) string {
	for i, x := range v {
		if !ok(x) {
			return "element " + itoa(i) + " out of the distribution"
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestInputDistributionErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(d map[string]any)
		want []string
	}{
		{"unknown", func(d map[string]any) { buf(d, 0)["dist"] = "gauss" }, []string{"buffers[0].dist", `"gauss" is not a distribution`, "uniform, normal, int, sorted, positive"}},
		{"output", func(d map[string]any) { buf(d, 2)["dist"] = "normal" }, []string{"buffers[2].dist", "only an input buffer"}},
		{"normal int32", func(d map[string]any) { buf(d, 0)["dist"] = "normal"; buf(d, 0)["dtype"] = "int32" }, []string{"buffers[0].dist", "draws floats", "int32"}},
		{"positive lo 0", func(d map[string]any) { buf(d, 0)["dist"] = "positive"; buf(d, 0)["range"] = []any{"0", "1"} }, []string{"buffers[0].range", "lo > 0"}},
		{"normal std 0", func(d map[string]any) { buf(d, 0)["dist"] = "normal"; buf(d, 0)["range"] = []any{"0", "0"} }, []string{"buffers[0].range", "standard deviation must be > 0"}},
		{"int empty", func(d map[string]any) { buf(d, 0)["dist"] = "int"; buf(d, 0)["range"] = []any{"k", "k - 1"} }, []string{"buffers[0].range", "empty"}},
		{"int float range", func(d map[string]any) { buf(d, 0)["dist"] = "int"; buf(d, 0)["range"] = []any{"0", "1.5"} }, []string{"buffers[0].range[1]"}},
		{"int without range", func(d map[string]any) { buf(d, 0)["dist"] = "int" }, []string{"buffers[0].range", `required with dist "int"`, "n - 1"}},
		{"uniform empty", func(d map[string]any) { buf(d, 0)["range"] = []any{"1", "0.5"} }, []string{"buffers[0].range", "empty"}},
		{"normal one", func(d map[string]any) { buf(d, 0)["dist"] = "normal"; buf(d, 0)["range"] = []any{"0"} }, []string{"buffers[0].range", "[mean, std]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mlxSpec(t, "out[0] = T(0);", tt.edit)
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func buf(d map[string]any, i int) map[string]any { return d["buffers"].([]any)[i].(map[string]any) }

// A constant with value is a number in reference.expr; with values an array.
func TestReferenceScalarConstant(t *testing.T) {
	c, err := mlxSpec(t, "out[0] = T(0);", func(d map[string]any) {
		m := d["source"].(map[string]any)["mlx"].(map[string]any)
		m["input_names"] = append(m["input_names"].([]any), "scale")
		m["constants"] = append(m["constants"].([]any), map[string]any{"name": "scale", "dtype": "float32", "value": "m + 0.5"})
		d["reference"] = map[string]any{"expr": "scale * 2 + shape[1]"}
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{9, 3}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range p.Reference() {
		if r != 2*9.5+3 {
			t.Fatalf("ref[%d] = %g, want %g", i, r, 2*9.5+3)
		}
	}
	_, err = mlxSpec(t, "out[0] = T(0);", func(d map[string]any) {
		m := d["source"].(map[string]any)["mlx"].(map[string]any)
		m["input_names"] = append(m["input_names"].([]any), "scale")
		m["constants"] = append(m["constants"].([]any), map[string]any{"name": "scale", "dtype": "float32", "value": "m + 0.5"})
		d["reference"] = map[string]any{"expr": "scale[0]"}
	})
	if err == nil {
		t.Fatal("a scalar constant was indexed like an array")
	}
}

// A spec in the kernels/gpu dialect draws its inputs by dist and range too.
func TestInputDistributionDialect(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	m["buffers"].([]any)[0].(map[string]any)["dist"] = "sorted"
	m["buffers"].([]any)[0].(map[string]any)["range"] = []any{"1", "n"}
	data, _ := json.Marshal(m)
	c, err := Parse(data, "scale.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := kernels.NewProblem(c.Kernel, kernels.F32, kernels.Case{Shape: []int{1000}}, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	x := p.Inputs[0]
	if !slices.IsSorted(x) || x[0] < 1 || x[len(x)-1] >= 1000 {
		t.Fatalf("x is not sorted in [1, 1000): %v ... %v", x[:3], x[len(x)-3:])
	}
}
