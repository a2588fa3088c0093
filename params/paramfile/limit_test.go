package paramfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sparseFile writes a file of size bytes (zeros after text) without
// writing them all.
func sparseFile(t *testing.T, text string, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadFileLimit(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(small, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		limit   int64
		want    string // the data read, when no error
		tooBig  bool
		regular bool
		missing bool
	}{
		{name: "under the limit", path: small, limit: 11, want: "0123456789"},
		{name: "at the limit", path: small, limit: 10, want: "0123456789"},
		{name: "over the limit", path: small, limit: 9, tooBig: true, regular: true},
		{name: "missing", path: filepath.Join(t.TempDir(), "absent"), limit: 10, missing: true},
		{name: "a device that never ends", path: "/dev/zero", limit: 1 << 20, tooBig: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); tt.path == "/dev/zero" && err != nil {
				t.Skip("no /dev/zero here")
			}
			data, err := ReadFileLimit(tt.path, tt.limit)
			var tl *TooLargeError
			switch {
			case tt.missing:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("err %v, want fs.ErrNotExist", err)
				}
			case tt.tooBig:
				if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Regular != tt.regular || tl.Limit != tt.limit {
					t.Fatalf("err %v (%#v), want a TooLargeError, regular %v", err, tl, tt.regular)
				}
				if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), SizeString(tt.limit)) {
					t.Errorf("error %q does not name the file and the limit", err)
				}
			case err != nil || string(data) != tt.want:
				t.Errorf("got %q, %v; want %q", data, err, tt.want)
			}
		})
	}
}

// Reading a device that never ends (show /dev/zero) stops at the limit at
// once, with an error that says what the file is.
func TestReadDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	start := time.Now()
	_, err := ReadFile("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: not a regular file, and it yields more than 64 MiB, the limit of a params file") {
		t.Errorf("ReadFile(/dev/zero): %v", err)
	}
	t.Logf("refused in %v", time.Since(start))
}

// WriteFileAtomic and MergeIntoFile never rename over something that is
// not a regular file, and leave no lock file next to it.
func TestWriteNotRegular(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out.json")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(dir, []byte("{}")); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("WriteFileAtomic over a directory: %v", err)
	}
	if err := MergeIntoFile(dir, typicalUpdate(), true); !errors.Is(err, ErrNotRegular) {
		t.Errorf("MergeIntoFile over a directory: %v", err)
	}
	if _, err := os.Stat(dir + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was created: %v", err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("the directory was replaced: %v", err)
	}
	if err := CheckRegular(filepath.Join(t.TempDir(), "absent")); err != nil {
		t.Errorf("CheckRegular of a missing file: %v", err)
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{MaxFileSize: "64 MiB", 1 << 30: "1 GiB", 1500: "1500 bytes", 2048: "2 KiB", 0: "0 bytes"} {
		if got := SizeString(n); got != want {
			t.Errorf("SizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
