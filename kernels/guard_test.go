package kernels

import (
	"strings"
	"testing"
)

func TestGuardedDetectsWritesOutside(t *testing.T) {
	tests := []struct {
		name  string
		write func(out []float32)
		want  string
	}{
		{"inside", func(out []float32) { out[0], out[len(out)-1] = 1, 2 }, ""},
		{"one past the end", func(out []float32) { out[:len(out)+1][len(out)] = 0 }, "past the end"},
		{"far past the end", func(out []float32) { out[:cap(out)][cap(out)-1] = 0 }, "past the end"},
	}
	for _, tt := range tests {
		g := NewGuarded[float32](37)
		tt.write(g.Data())
		err := g.Check()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	h := NewGuarded[uint16](5)
	h.Data()[:6][5] = 0x3c00
	if err := h.Check(); err == nil {
		t.Error("f16 write past the end not detected")
	}
	h.Arm()
	if err := h.Check(); err != nil {
		t.Errorf("re-armed: %v", err)
	}
}
