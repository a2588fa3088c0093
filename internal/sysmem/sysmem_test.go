package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKibField(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(path, []byte("MemTotal:       24000000 kB\nMemAvailable:   1000 kB\nVmSize:\t  2048 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want uint64
		ok   bool
	}{
		{"MemAvailable:", 1000 << 10, true},
		{"VmSize:", 2048 << 10, true},
		{"SwapFree:", 0, false},
	}
	for _, tt := range tests {
		got, ok := kibField(path, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := kibField(filepath.Join(dir, "none"), "MemAvailable:"); ok {
		t.Error("a missing file gave a value")
	}
}

// On Linux the available memory is known and smaller than the whole of a
// 64-bit address space.
func TestAvailable(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	b, src, ok := Available()
	if !ok || b == 0 || b > 1<<50 || src == "" {
		t.Fatalf("Available() = %d, %q, %v", b, src, ok)
	}
}
