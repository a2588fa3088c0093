package main

import (
	"strings"
	"testing"
)

// Facts read as plain numbers, sizes in bytes also in binary units.
func TestFactString(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    float64
		want string
	}{
		{"llc_bytes", 33554432, "33554432 (32 MiB)"},
		{"total_mem_bytes", 81559347200, "81559347200 (76 GiB)"},
		{"l2_bytes", 52428800, "52428800 (50 MiB)"},
		{"max_shared_per_block", 49152, "49152"},
		{"registers_per_block", 65536, "65536"},
		{"bandwidth_gbps", 3018.4, "3018.4"},
		{"peak_gflops", 6.7e+07, "67000000"},
		{"launch_overhead_us", 0.000125, "0.000125"},
		{"llc_bytes", 512, "512"},
	} {
		if got := factString(c.key, c.v); got != c.want {
			t.Errorf("factString(%s, %g) = %q, want %q", c.key, c.v, got, c.want)
		}
	}
}

// devices prints no number with an exponent.
func TestDevicesPlainNumbers(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, "devices")
	if code != 0 || !strings.Contains(out, "llc_bytes=") {
		t.Fatalf("devices exited %d:\n%s", code, out)
	}
	if strings.Contains(out, "e+") {
		t.Errorf("devices prints an exponent:\n%s", out)
	}
}
