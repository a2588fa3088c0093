package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/params/families"
)

func TestTable(t *testing.T) {
	tab := NewTable[int]("test routine")
	tab.Add(families.Softmax, 1)
	tab.Add(families.GemmAV, 2)
	if v, ok := tab.Get(families.GemmAV); !ok || v != 2 {
		t.Errorf("Get(gemm_av) = %d, %v", v, ok)
	}
	if _, ok := tab.Get(families.RMSNorm); ok {
		t.Error("Get found a family never added")
	}
	if got := tab.Families(); !slices.Equal(got, []string{families.GemmAV, families.Softmax}) {
		t.Errorf("Families() = %v", got)
	}
	tests := []struct {
		family, want string
	}{
		{"sofmax", `test routine for "sofmax", which is not a built-in family`},
		{families.Softmax, `test routine for "softmax" added twice`},
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
