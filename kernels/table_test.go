package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params"
)

func TestTable(t *testing.T) {
	tab := NewTable[int]("test routine")
	tab.Add(params.Softmax, 1)
	tab.Add(params.GemmAV, 2)
	if v, ok := tab.Get(params.GemmAV); !ok || v != 2 {
		t.Errorf("Get(gemm_av) = %d, %v", v, ok)
	}
	if _, ok := tab.Get(params.RMSNorm); ok {
		t.Error("Get found a family never added")
	}
	if got := tab.Families(); !slices.Equal(got, []string{params.GemmAV, params.Softmax}) {
		t.Errorf("Families() = %v", got)
	}
	tests := []struct {
		family, want string
	}{
		{"sofmax", `test routine for "sofmax", which is not a built-in family`},
		{params.Softmax, `test routine for "softmax" added twice`},
	}
	for _, tt := range tests {
		if got := addPanic(tab, tt.family); !strings.Contains(got, tt.want) {
			t.Errorf("Add(%q) panicked with %q, want %q", tt.family, got, tt.want)
		}
	}
}

func addPanic(tab *Table[int], family string) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	tab.Add(family, 3)
	return ""
}
