package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
)

// onlyPath leaves check with the commands of dir alone: no clang, no
// xcrun unless dir holds one.
func onlyPath(t *testing.T, dir string) {
	t.Helper()
	t.Setenv("PATH", dir)
	t.Setenv("KERNTUNE_CLANG", "")
}

// Without a Metal compiler check does not pass silently: it warns, names
// what is missing and how to install it, and exits 2, unless
// --no-msl-check says to go on.
func TestCheckWithoutMSLCompiler(t *testing.T) {
	onlyPath(t, t.TempDir())
	qr := "../../examples/mlx_qr_col_dot.json"
	wantExit(t, []string{"check", "--spec", qr, "--backend", "none"}, exitUsage,
		"WARNING: the Metal sources of "+qr+" were NOT checked", "apt-get install clang-14", "KERNTUNE_CLANG", "xcrun -sdk macosx metal", "--no-msl-check", "MSL check: NOT RUN")
	wantExit(t, []string{"check", "--spec", qr, "--backend", "none", "--no-msl-check"}, 0, "MSL check: skipped (--no-msl-check)")
	code, stdout, _ := runIn("check", "--spec", qr, "--backend", "none", "--json")
	var got checkJSON
	testutil.DecodeJSON(t, stdout, &got)
	if code != exitUsage || len(got.Specs) != 1 || got.Specs[0].MSL == nil || !got.Specs[0].MSL.NoCompiler {
		t.Errorf("check --json without a compiler: exit %d, %+v", code, got)
	}
}

// fakeXcrun writes an xcrun that finds metal and "compiles" by logging
// its arguments to log, failing with a clang-style error on a source that
// holds reject.
func fakeXcrun(t *testing.T, dir, log, reject string) {
	t.Helper()
	script := `#!/bin/sh
if [ "$3" = "--find" ]; then echo /fake/metal; exit 0; fi
echo "$@" >> ` + log + `
for a in "$@"; do case "$a" in *.metal) src="$a";; esac; done
if grep -q '` + reject + `' "$src"; then
  n=$(grep -n '` + reject + `' "$src" | head -1 | cut -d: -f1)
  echo "$src:$n:3: error: use of undeclared identifier 'oops'"; exit 1
fi
exit 0
`
	if err := os.WriteFile(filepath.Join(dir, "xcrun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Where Apple's compiler answers through xcrun, check compiles with it
// (for the spec's Metal version), says so, and cites its errors in the
// user's own file.
func TestCheckWithAppleCompiler(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the fake xcrun")
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "xcrun.log")
	fakeXcrun(t, bin, log, "oops")
	onlyPath(t, bin+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
	if mslcheck.FindXcrun() == "" {
		t.Fatal("FindXcrun does not find the fake xcrun on PATH")
	}
	qr := "../../examples/mlx_qr_col_dot.json"
	wantExit(t, []string{"check", "--spec", qr, "--backend", "none"}, 0,
		"MSL check by Apple's Metal compiler (xcrun -sdk macosx metal -std=metal3.1): 8 Metal sources passed")
	args := string(testutil.ReadFile(t, log))
	for _, w := range []string{"-sdk macosx metal -std=metal3.1 -c ", " -o /dev/null"} {
		if !strings.Contains(args, w) {
			t.Errorf("xcrun's arguments lack %q:\n%s", w, args)
		}
	}
	dir := t.TempDir()
	body := testutil.ReadFile(t, "../../examples/mlx_qr_col_dot.body.metal")
	for _, f := range []string{"mlx.header.metal", "mlx_qr_col_dot.json"} {
		testutil.WriteFile(t, dir, f, string(testutil.ReadFile(t, filepath.Join("../../examples", f))))
	}
	testutil.WriteFile(t, dir, "mlx_qr_col_dot.body.metal", strings.Replace(string(body), "float(v[i])", "float(v[i]) + oops", 1))
	broken := filepath.Join(dir, "mlx_qr_col_dot.json")
	wantExit(t, []string{"check", "--spec", broken, "--backend", "none"}, exitUsage,
		"by Apple's Metal compiler", filepath.Join(dir, "mlx_qr_col_dot.body.metal")+":21 (source.mlx.source_file line 21): error: use of undeclared identifier 'oops'")
	if code, out := runCLI(t, "check", "--spec", broken, "--backend", "none"); code != exitUsage || strings.Contains(out, "stand-in lacks it") {
		t.Errorf("Apple's compiler's errors are not the stand-in's: exit %d\n%s", code, out)
	}
}

// A name clang's stand-in does not declare: the error says the stand-in
// may lack it and how to go on.
func TestCheckUndeclaredNamesTheStandIn(t *testing.T) {
	mslcheck.Require(t)
	onlyPath(t, "/usr/bin"+string(os.PathListSeparator)+"/bin")
	t.Setenv("KERNTUNE_CLANG", mslcheck.FindClang())
	dir := t.TempDir()
	body := testutil.ReadFile(t, "../../examples/mlx_qr_col_dot.body.metal")
	for _, f := range []string{"mlx.header.metal", "mlx_qr_col_dot.json"} {
		testutil.WriteFile(t, dir, f, string(testutil.ReadFile(t, filepath.Join("../../examples", f))))
	}
	testutil.WriteFile(t, dir, "mlx_qr_col_dot.body.metal", strings.Replace(string(body), "float(v[i])", "metal::not_in_msl(float(v[i]))", 1))
	broken := filepath.Join(dir, "mlx_qr_col_dot.json")
	wantExit(t, []string{"check", "--spec", broken, "--backend", "none"}, exitUsage,
		"no member named 'not_in_msl' in namespace 'metal'", "if 'not_in_msl' is part of Metal's standard library, the stand-in lacks it", "--no-msl-check")
	wantExit(t, []string{"check", "--spec", broken, "--backend", "none", "--no-msl-check"}, 0, "MSL check: skipped (--no-msl-check)")
}

// What Metal rejects and clang accepts (here double) fails check too,
// cited in the user's own file with what Metal allows.
func TestCheckRejectsWhatMetalRejects(t *testing.T) {
	t.Parallel()
	mslcheck.Require(t)
	dir := t.TempDir()
	body := testutil.ReadFile(t, "../../examples/mlx_qr_col_dot.body.metal")
	for _, f := range []string{"mlx.header.metal", "mlx_qr_col_dot.json"} {
		testutil.WriteFile(t, dir, f, string(testutil.ReadFile(t, filepath.Join("../../examples", f))))
	}
	testutil.WriteFile(t, dir, "mlx_qr_col_dot.body.metal", strings.Replace(string(body), "float(v[i])", "(double)v[i]", 1))
	broken := filepath.Join(dir, "mlx_qr_col_dot.json")
	wantExit(t, []string{"check", "--spec", broken, "--backend", "none"}, exitUsage,
		filepath.Join(dir, "mlx_qr_col_dot.body.metal")+":21 (source.mlx.source_file line 21): error: double: Metal has no 64-bit floating point type; use float")
}
