package families

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseShape(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{"1x896x4864", []int{1, 896, 4864}, ""},
		{"4096x4096", []int{4096, 4096}, ""},
		{"7", []int{7}, ""},
		{"01x2", []int{1, 2}, ""},
		{"2147483647x1", []int{MaxDim, 1}, ""},
		{"", nil, "empty shape"},
		{"0x1x1", nil, "dim 1 is 0; dims must be at least 1"},
		{"ax2x3", nil, `dim 1 ("a") is not a positive decimal integer`},
		{"1x-2x3", nil, `dim 2 ("-2") is not a positive decimal integer`},
		{"+1x2x3", nil, "not a positive decimal integer"},
		{"1 x2", nil, "not a positive decimal integer"},
		{"1X2", nil, "not a positive decimal integer"},
		{"1xx2", nil, "dim 2 is empty"},
		{"1x2x", nil, "dim 3 is empty"},
		{"x", nil, "dim 1 is empty"},
		{"2147483648x1", nil, "dim 1 (2147483648) exceeds the limit of 2147483647"},
		{"1x99999999999999999999999999", nil, "exceeds the limit"},
		{"1.5x2", nil, "not a positive decimal integer"},
	}
	for _, tt := range tests {
		got, err := ParseShape(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseShape(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseShape(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	// A shape ParseShape accepts can still be wrong for a family: Classify decides.
	s, err := ParseShape("1x896")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Builtin()[GemvNT].Classify(s); err == nil {
		t.Error("gemv_nt accepted 1x896")
	}
}
