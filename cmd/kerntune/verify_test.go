package main

import (
	"strings"
	"testing"
)

func TestVerifyWhere(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"verify", "--backend", "cpu", "--kernel", "softmax", "--dtype", "f32", "--where", "ROWS=2", "--where", "THREADS=2", "--where", "UNROLL=2"}, 0, "1/1 candidate passed"},
		{[]string{"verify", "--backend", "cpu", "--kernel", "softmax", "--where", "RPB=2"}, 2, "--where RPB=2: no candidate"},
		{[]string{"verify", "--backend", "cpu", "--where", "MMA"}, 2, `--where "MMA": want NAME=INTEGER`},
		{[]string{"verify", "--backend", "cpu", "--where", "MMA=x"}, 2, `want NAME=INTEGER`},
	}
	for _, tt := range tests {
		code, out, errOut := runGet(t, tt.args...)
		if code != tt.code || !strings.Contains(out+errOut, tt.contains) {
			t.Errorf("%v: exit %d, want %d, output %q (want it to contain %q)", tt.args, code, tt.code, out+errOut, tt.contains)
		}
	}
}
