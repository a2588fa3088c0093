package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/tuner"
)

func TestVerifyWhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"verify", "--backend", "cpu", "--kernel", "softmax", "--dtype", "f32", "--where", "ROWS=2", "--where", "THREADS=2", "--where", "UNROLL=2"}, 0, "1/1 candidate passed"},
		{[]string{"verify", "--backend", "cpu", "--kernel", "softmax", "--where", "RPB=2"}, 2, "--where RPB=2: softmax has no parameter RPB on the cpu backend (it has ROWS, UNROLL, THREADS)"},
		{[]string{"verify", "--backend", "cpu", "--where", "MMA"}, 2, `--where "MMA": want NAME=INTEGER`},
		{[]string{"verify", "--backend", "cpu", "--where", "MMA=x"}, 2, `want NAME=INTEGER`},
	}
	for _, tt := range tests {
		wantExit(t, tt.args, tt.code, tt.contains)
	}
}

// A --where value outside a family's allowed values on the backend, or a
// parameter the family does not have there, is a usage error naming
// --where and what is allowed, for tune as for verify, before any work:
// tune leaves no file and no journal. verify needs one selected family to
// have the value, tune every family it tunes.
func TestWhereOutsideTheSpace(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "p.json")
	tune := []string{"tune", "--backend", "cpu", "--kernel", "softmax", "--shape", "4x64", "--budget", "2e", "--out", out, "-q"}
	tests := []struct {
		args []string
		want string
	}{
		{append(tune, "--where", "BN=7"), "--where BN=7: softmax has no parameter BN on the cpu backend (it has ROWS, UNROLL, THREADS)"},
		{append(tune, "--where", "NOPE=1"), "--where NOPE=1: softmax has no parameter NOPE"},
		{append(tune, "--where", "THREADS=3"), "--where THREADS=3: softmax allows THREADS = 1, 2, 4, 8, 16, 32, 64 on the cpu backend"},
		{[]string{"tune", "--backend", "cpu", "--kernel", "gemv_nt", "--kernel", "softmax", "--budget", "2e", "--out", out, "-q", "--where", "BN=8"}, "--where BN=8: softmax has no parameter BN"},
		{[]string{"verify", "--backend", "cpu", "--kernel", "softmax", "--where", "ROWS=3"}, "--where ROWS=3: softmax allows ROWS = 1, 2, 4, 8, 16, 64 on the cpu backend"},
		{[]string{"verify", "--backend", "cpu", "--where", "NOPE=1"}, "--where NOPE=1: gemm_at_b has no parameter NOPE"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runIn(tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q", tt.args, code, exitUsage, stderr+stdout, tt.want)
		}
		for _, p := range []string{out, tuner.JournalPath(out)} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("%v left %s behind", tt.args, p)
			}
		}
	}
}
