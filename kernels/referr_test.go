package kernels

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// A kernel's ReferenceErr replaces Reference: it sees the problem's dtype,
// and its error fails every verification with its message.
func TestReferenceErr(t *testing.T) {
	base := testutil.Lookup(t, Get, "softmax")
	c := base.Odd[0]
	tests := []struct {
		name    string
		err     error
		wantErr string
	}{
		{"computes", nil, ""},
		{"fails", errors.New("k_ref.py raised ZeroDivisionError"), "k_ref.py raised ZeroDivisionError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := *base
			var gotDT DType
			k.ReferenceErr = func(dt DType, cs Case, in [][]float32) ([]float64, error) {
				gotDT = dt
				if tt.err != nil {
					return nil, tt.err
				}
				return base.Reference(cs, in), nil
			}
			p, err := NewProblem(&k, F16, c, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			want := base.Reference(c, p.Inputs)
			out := make([]float32, len(want))
			for i, v := range want {
				out[i] = float32(v)
			}
			err = p.Verify(out)
			if gotDT != F16 {
				t.Fatalf("ReferenceErr saw dtype %q, want f16", gotDT)
			}
			if tt.wantErr == "" {
				if err != nil || p.ReferenceErr() != nil {
					t.Fatalf("verify: %v; reference: %v", err, p.ReferenceErr())
				}
				out[0] += 1
				if p.Verify(out) == nil {
					t.Fatal("a wrong output passed")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "reference on") {
				t.Fatalf("verify: %v; want the reference's error", err)
			}
			if len(p.Reference()) != base.OutLen(c.Shape) {
				t.Fatalf("a failed reference has %d elements, want %d", len(p.Reference()), base.OutLen(c.Shape))
			}
		})
	}
}
