package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile writes data to the file name in dir, making the folders name
// has, and returns its path; it fails t when the file cannot be written,
// so that a test never goes on with an input it did not make.
func WriteFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ReadFile is the content of the file at path; it fails t when the file
// cannot be read.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Unchanged fails t when the file at path does not hold want: a command
// that fails or refuses must leave the files it found as they were.
func Unchanged(t testing.TB, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Errorf("%s was changed (%v); it holds:\n%s", path, err, got)
	}
}

// DecodeJSON decodes the JSON document data into v, failing t, with the
// document, when it does not decode.
func DecodeJSON[D ~string | ~[]byte](t testing.TB, data D, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("not JSON for %T: %v\n%s", v, err, data)
	}
}

// SameKeys says how got differs from want, compared by Key in order: in
// length, or at the first that differs; nil where they are the same.
func SameKeys[T interface{ Key() string }](got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d candidates, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Key() != want[i].Key() {
			return fmt.Errorf("candidate %d is %s, want %s", i, got[i].Key(), want[i].Key())
		}
	}
	return nil
}

// Outcome checks the result of one case of a table: with wantErr set, an
// error that contains it; otherwise no error and got equal to want. what
// names the case in failures.
func Outcome[T comparable](t testing.TB, what string, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %#v, %v; want an error containing %q", what, got, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("%s: %#v, %v; want %#v", what, got, err, want)
	}
}
