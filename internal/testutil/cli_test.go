package testutil

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the failures Outcome reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Outcome fails a case for a wrong value, a missing error, an error
// without the wanted text and an error where none is wanted, and for
// nothing else.
func TestOutcome(t *testing.T) {
	boom := errors.New("boom: too small")
	for _, c := range []struct {
		name     string
		got      int
		err      error
		want     int
		wantErr  string
		failures int
	}{
		{"right value", 3, nil, 3, "", 0},
		{"wrong value", 4, nil, 3, "", 1},
		{"unwanted error", 3, boom, 3, "", 1},
		{"wanted error", 0, boom, 0, "too small", 0},
		{"no error", 0, nil, 0, "too small", 1},
		{"other error", 0, boom, 0, "too large", 1},
	} {
		r := &recorder{TB: t}
		Outcome(r, c.name, c.got, c.err, c.want, c.wantErr)
		if len(r.errs) != c.failures {
			t.Errorf("%s: failures %q, want %d", c.name, r.errs, c.failures)
		}
	}
}

// WriteFile makes the folders of the name it is given, and ReadFile reads
// back what it wrote.
func TestWriteFileReadFile(t *testing.T) {
	dir := t.TempDir()
	p := WriteFile(t, dir, "a/b/c.txt", "text")
	if p != filepath.Join(dir, "a", "b", "c.txt") {
		t.Errorf("path %s", p)
	}
	if got := string(ReadFile(t, p)); got != "text" {
		t.Errorf("read %q, want %q", got, "text")
	}
}

// Fatalf records, as Errorf; the helpers return after it in these tests.
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// DecodeJSON decodes a document, and fails with the document where it is
// not JSON.
func TestDecodeJSON(t *testing.T) {
	var v struct{ N int }
	r := &recorder{TB: t}
	DecodeJSON(r, `{"N": 3}`, &v)
	if len(r.errs) != 0 || v.N != 3 {
		t.Errorf("decoded %+v, failures %q", v, r.errs)
	}
	DecodeJSON(r, []byte(`{"N": `), &v)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], `{"N": `) {
		t.Errorf("failures %q, want one quoting the document", r.errs)
	}
}

// Unchanged passes a file that holds what it held, and fails one that
// holds something else or is gone.
func TestUnchanged(t *testing.T) {
	dir := t.TempDir()
	p := WriteFile(t, dir, "f", "old")
	for _, c := range []struct {
		path, want string
		failures   int
	}{
		{p, "old", 0},
		{p, "new", 1},
		{filepath.Join(dir, "gone"), "", 1},
	} {
		r := &recorder{TB: t}
		Unchanged(r, c.path, c.want)
		if len(r.errs) != c.failures {
			t.Errorf("%s holding %q: failures %q, want %d", c.path, c.want, r.errs, c.failures)
		}
	}
}

type key string

func (k key) Key() string { return string(k) }

// SameKeys finds a difference in length or at any place, and none between
// equal lists.
func TestSameKeys(t *testing.T) {
	for _, c := range []struct {
		got, want []key
		err       string
	}{
		{[]key{"a", "b"}, []key{"a", "b"}, ""},
		{nil, nil, ""},
		{[]key{"a"}, []key{"a", "b"}, "1 candidates, want 2"},
		{[]key{"a", "c"}, []key{"a", "b"}, "candidate 1 is c, want b"},
	} {
		err := SameKeys(c.got, c.want)
		if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("SameKeys(%v, %v) = %v, want %q", c.got, c.want, err, c.err)
		}
	}
}
