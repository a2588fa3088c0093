package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SkipUnlessRequired skips t for a missing prerequisite, described by
// format and args, or fails it when the environment variable env is set:
// CI sets the KTDEV_REQUIRE_ switches where the prerequisite must be there,
// so that a broken install fails instead of passing silently.
func SkipUnlessRequired(t testing.TB, env, format string, args ...any) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Fatalf(format+" (%s is set)", append(args, env)...)
	}
	t.Skipf(format, args...)
}

// CCompiler returns the path of the first C compiler on PATH of $CC, cc,
// gcc, clang and clang-14, or "" when there is none.
func CCompiler() string {
	for _, name := range []string{os.Getenv("CC"), "cc", "gcc", "clang", "clang-14"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Python3 is the interpreter the tests of the Python loader run; they skip
// without one unless KTDEV_REQUIRE_PYTHON is set (CI).
func Python3(t testing.TB) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		SkipUnlessRequired(t, "KTDEV_REQUIRE_PYTHON", "python3 not found")
	}
	return py
}

// WantErr checks err against want, a table's expected error: "" means no
// error, anything else an error whose message contains want.
func WantErr(t testing.TB, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("rejected: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}

// RefusesDevZero checks that read, a reader with a size limit, refuses
// /dev/zero (a non-regular file that never ends) with exactly the error
// want, rather than reading forever; it skips where there is no /dev/zero.
func RefusesDevZero(t testing.TB, read func(path string) error, want string) {
	t.Helper()
	const path = "/dev/zero"
	if _, err := os.Stat(path); err != nil {
		t.Skip("no /dev/zero here")
	}
	if err := read(path); err == nil || err.Error() != want {
		t.Errorf("reading %s: %v, want %q", path, err, want)
	}
}

// Lookup returns get(name), failing t when get fails: the catalogs' Get
// (kernels.Get, gpu.Get) for a name a test relies on.
func Lookup[T any](t testing.TB, get func(string) (T, error), name string) T {
	t.Helper()
	v, err := get(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
