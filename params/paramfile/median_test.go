package paramfile

import "testing"

func TestSourceMedianUS(t *testing.T) {
	f := &File{Devices: map[string]*Device{"cpu:a": {Kernels: map[string]map[string]*Entry{"gemv_nt": {
		"f32/tiny": {MedianUS: 30, Shapes: [][]int{{1, 8, 8}, {1, 16, 16}}, ShapeMedianUS: []float64{10, 20}},
		"f32/old":  {MedianUS: 7, Shapes: [][]int{{1, 4, 4}}},
	}}}}}
	tests := []struct {
		source string
		shape  []int
		want   float64
	}{
		{"file:cpu:a/gemv_nt/f32/tiny", []int{1, 16, 16}, 20},
		{"file:cpu:a/gemv_nt/f32/tiny", []int{1, 32, 32}, 0},
		{"file:cpu:a/gemv_nt/f32/old", []int{1, 4, 4}, 7},
		{"file:cpu:a/gemv_nt/f32/tiny; env", []int{1, 8, 8}, 0},
		{"default", []int{1, 8, 8}, 0},
		{"file:cpu:b/gemv_nt/f32/tiny", []int{1, 8, 8}, 0},
	}
	for _, tt := range tests {
		if got := f.SourceMedianUS(tt.source, tt.shape); got != tt.want {
			t.Errorf("SourceMedianUS(%q, %v) = %v, want %v", tt.source, tt.shape, got, tt.want)
		}
	}
	var none *File
	if got := none.SourceMedianUS("file:x/y/z", nil); got != 0 {
		t.Errorf("a nil file: %v", got)
	}
}
