package families

import (
	"strings"
	"testing"
)

// The GEMM space of the GPU backends: each combination is valid for one body
// only, and a rejection names the parameter at fault.
func TestGPUGemmSpaceCheck(t *testing.T) {
	simt := func(kv ...int) map[string]int {
		p := map[string]int{"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PAD": 0, "MMA": 0, "WM": 1, "WN": 1, "STAGES": 1, "TF32": 0}
		for i := 0; i+1 < len(kv); i += 2 {
			p[[]string{"BM", "BN", "BK", "TM", "TN", "PAD", "MMA", "WM", "WN", "STAGES", "TF32"}[kv[i]]] = kv[i+1]
		}
		return p
	}
	const bm, bn, bk, tm, tn, pad, mma, wm, wn, stages, tf32 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
	mmaP := func(kv ...int) map[string]int {
		return simt(append([]int{mma, 1, tm, 1, tn, 1, wm, 2, wn, 2, stages, 2}, kv...)...)
	}
	tests := []struct {
		name string
		p    map[string]int
		want string // "" valid, else a substring of the error
	}{
		{"SIMT default-like", simt(), ""},
		{"SIMT double-buffered", simt(stages, 2), ""},
		{"SIMT 3 stages", simt(stages, 3), "STAGES=3"},
		{"SIMT with a warp layout", simt(wm, 2), "WM=2"},
		{"SIMT TF32", simt(tf32, 1), "TF32=1"},
		{"SIMT BN 256", simt(bn, 256, tn, 8), "MMA=1 only"},
		{"SIMT BK 64", simt(bk, 64), "MMA=1 only"},
		{"SIMT too much threadgroup memory", simt(bm, 128, bn, 128, bk, 32, tm, 8, tn, 8, stages, 2), "12288"},
		{"SIMT older file without the new parameters", map[string]int{"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PAD": 0, "MMA": 0}, ""},
		{"MMA MLX-like", mmaP(), ""},
		{"MMA metal-flash-attention M1", mmaP(bm, 48, bn, 48, bk, 24, stages, 1), ""},
		{"MMA metal-flash-attention M3", mmaP(bm, 32, bn, 32, bk, 8, wm, 1, wn, 1, stages, 1), ""},
		{"MMA with TM", mmaP(tm, 2), "TM=2"},
		{"MMA with PAD", mmaP(pad, 4), "PAD=4"},
		{"MMA block not a whole number of 8×8 fragments", mmaP(bm, 48, wm, 4), "multiples of 8·WM"},
		{"MMA warp block too large", mmaP(bm, 128, bn, 256, wm, 1, wn, 2), "at most 4096"},
		{"MMA tile too small", mmaP(bm, 16, wm, 1), "at least 32"},
		{"MMA without STAGES", mmaP(stages, 0), "STAGES=0"},
		{"bad MMA", simt(mma, 2), "MMA=2"},
	}
	sp := Builtin()[GemmAV].Spaces["gpu"]
	for _, tt := range tests {
		err := sp.Check(nil, tt.p)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: rejected: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	// Every parameter's default lies in its values, and the defaults form a valid candidate.
	for _, p := range sp.Params {
		if !p.Allowed(p.Default) {
			t.Errorf("%s: default %d not among %s", p.Name, p.Default, p.ValuesString())
		}
	}
	if err := sp.Check(nil, sp.Defaults()); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

// Every built-in family's defaults lie in their values and form a valid
// candidate on every kind of backend, and its file is named after it.
func TestBuiltinDefaultsValid(t *testing.T) {
	for name, f := range Builtin() {
		for kind, sp := range f.Spaces {
			for _, p := range sp.Params {
				if !p.Allowed(p.Default) {
					t.Errorf("%s %s: %s's default %d not among %s", name, kind, p.Name, p.Default, p.ValuesString())
				}
			}
			if sp.Check != nil {
				if err := sp.Check(nil, sp.Defaults()); err != nil {
					t.Errorf("%s %s: defaults rejected: %v", name, kind, err)
				}
			}
		}
	}
	if got := len(BuiltinNames()); got != len(builtinDescs) || got < 6 {
		t.Errorf("%d built-in families from %d descriptions", got, len(builtinDescs))
	}
}

// The lora space of the GPU backends refuses threadgroups whose registers
// cannot exist on a GPU: such a candidate would spill on CUDA, be cut down
// by Metal, and on a CPU OpenCL device unroll a reduction per accumulator
// across a thousand work-items. Its neighbours with fewer threads stay.
func TestGPULoraRegisters(t *testing.T) {
	p := func(tg, bm, cps, unroll, vec int) map[string]int {
		return map[string]int{"TG": tg, "TPR": 32, "BM": bm, "CPS": cps, "KS": 1, "MMA": 0, "VEC": vec, "UNROLL": unroll}
	}
	shape := []int{16, 896, 896, 16} // m, n, k, r
	tests := []struct {
		name string
		p    map[string]int
		want string // "" valid, else a substring of the error
	}{
		{"default-like", p(128, 1, 1, 1, 1), ""},
		{"the largest tile at 128 threads", p(128, 16, 8, 2, 8), ""},
		{"the largest tile at 1024 threads", p(1024, 16, 8, 2, 8), "64 Ki 32-bit registers"},
		{"the largest tile at 256 threads", p(256, 16, 8, 2, 8), "8·16 + 2·8·8 + 8 floats"},
		{"a modest tile at 1024 threads", p(1024, 4, 2, 2, 8), ""},
	}
	sp := Builtin()[Lora].Spaces["gpu"]
	for _, tt := range tests {
		err := sp.Check(shape, tt.p)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: rejected: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
