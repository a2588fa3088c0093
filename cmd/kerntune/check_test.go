package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/mslcheck"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params/families"
)

func TestCheckSpecCLI(t *testing.T) {
	t.Parallel()
	bad := testutil.WriteFile(t, t.TempDir(), "bad.json", `{"name": "x", "dims": ["n"], "source": {"body": "x"}, "buffers": [{"name": "y", "io": "out", "length": "n"}],
	  "params": [], "launch": {"threads": "32", "grid": ["cdiv(n, BN)"]}, "shapes": [[10]], "reference": {"expr": "0"}}`)
	tests := []cliCase{
		// swiglu's static check is TestCheckJSON's (clang makes each one cost).
		{[]string{"check", "--spec", "../../examples/m1_gemv.json", "--backend", "none"}, 0,
			[]string{"kernel m1_gemv", "implements gemv_nt", "class largeK_smallN", "sources generated"}},
		{[]string{"check", "--spec", bad, "--backend", "none"}, 2, []string{bad, "launch.grid[0]", `"cdiv(n, BN)"`, "unknown name BN"}},
		// Every GPU backend is named where the spec's backends are listed, OpenCL included.
		{[]string{"check", "--spec", "../../examples/swiglu.json", "--backend", "cpu"}, 2, []string{"cpu backend cannot run them", "use cuda, metal, opencl, or none"}},
		{[]string{"tune", "--spec", "../../examples/swiglu.json", "--backend", "cpu", "--out", filepath.Join(t.TempDir(), "p.json")}, 2, []string{"cpu backend cannot run them", "use --backend cuda, metal or opencl"}},
		{[]string{"check", "--spec", "../../examples/swiglu.json", "--backend", "vulkan"}, 2, []string{`unknown backend "vulkan"`, "opencl"}},
		{[]string{"import-variants", "../../examples/variants_enhanced.json", "--name", "imported", "--only-listed"}, 0, []string{`"BN"`, "5 disabled variants", "supports.smallK"}},
	}
	for _, tt := range tests {
		wantExit(t, tt.args, tt.code, tt.want...)
	}
	// A backend check cannot use is refused before the static checks
	// (candidate generation and clang), which print the spec's summary.
	for _, b := range []string{"vulkan", "cpu"} {
		if code, out := runCLI(t, "check", "--spec", "../../examples/swiglu.json", "--backend", b); code != exitUsage || strings.Contains(out, "sources generated") {
			t.Errorf("check --backend %s: exit %d, and the static checks ran first:\n%s", b, code, out)
		}
	}
	if code, out := runCLI(t, "check", "--spec", "../../examples/mlx_qr_col_dot.json", "--backend", "cuda"); code != exitUsage || strings.Contains(out, "sources generated") {
		t.Errorf("check of an mlx spec --backend cuda: exit %d, and the static checks ran first:\n%s", code, out)
	}
}

// check --json prints the static checks (and the device checks) as one
// JSON document on stdout, with the numbers the text shows.
func TestCheckJSON(t *testing.T) {
	t.Parallel()
	code, text := runCLI(t, "check", "--spec", "../../examples/swiglu.json", "--backend", "none")
	if code != 0 {
		t.Fatalf("check: exit %d\n%s", code, text)
	}
	code, stdout, stderr := runIn("check", "--spec", "../../examples/swiglu.json", "--backend", "none", "--json")
	if code != 0 {
		t.Fatalf("check --json: exit %d\n%s", code, stderr)
	}
	out := stdout
	var got checkJSON
	testutil.DecodeJSON(t, out, &got)
	if len(got.Specs) != 1 || got.DeviceCheck != "not run (--backend none)" || len(got.Reports) != 0 {
		t.Fatalf("got %+v", got)
	}
	sc := got.Specs[0]
	if sc.Kernel != "swiglu" || sc.Valid == 0 || len(sc.APIs) == 0 || len(sc.Params) == 0 || len(sc.Classes) == 0 {
		t.Errorf("spec check %+v", sc)
	}
	for _, w := range []string{
		"kernel swiglu", "reference expression",
		fmt.Sprintf("space: %d points, %d valid for every shape", sc.SpaceSize, sc.Valid),
		fmt.Sprintf("sources generated: %d (", sc.Sources),
		fmt.Sprintf("verification shapes: %d", sc.VerificationShapes),
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the text lacks %q, which --json says:\n%s", w, text)
		}
	}
}

// Every command that prints data takes --json, as the README says; the
// exceptions print no data (completion, help) or write JSON already
// (export writes T4 JSON, import-variants a JSON spec).
func TestEveryDataCommandTakesJSON(t *testing.T) {
	noJSON := map[string]bool{"completion": true, "help": true, "export": true, "import-variants": true}
	for _, c := range newRootCmd(systemFactory()).Commands() {
		if c.Hidden || noJSON[c.Name()] {
			continue
		}
		if c.Flags().Lookup("json") == nil {
			t.Errorf("%s has no --json", c.Name())
		}
	}
}

// The README's command list names every command kerntune --help lists.
func TestREADMEListsEveryCommand(t *testing.T) {
	readme := readREADME(t)
	start := strings.Index(readme, "## The command line")
	if start < 0 {
		t.Fatal("README has no section \"The command line\"")
	}
	list := readme[start:]
	if end := strings.Index(list[3:], "\n## "); end >= 0 {
		list = list[:end+3]
	}
	for _, c := range newRootCmd(systemFactory()).Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if !strings.Contains(list, "\nkerntune "+c.Name()+" ") {
			t.Errorf("the README's command list lacks kerntune %s", c.Name())
		}
	}
}

// The README's default-workload table lists every built-in family's
// workload as kerntune kernels prints it, case for case.
func TestREADMEListsEveryWorkload(t *testing.T) {
	_, table, ok := strings.Cut(readREADME(t), "| family | default workload |\n")
	if !ok {
		t.Fatal("README has no default-workload table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	for _, name := range families.BuiltinNames() {
		k, err := kernels.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if k.Example {
			continue // not in the default workload
		}
		prefix := "| `" + k.Name + "` | "
		var row string
		for _, line := range strings.Split(table, "\n") {
			if strings.HasPrefix(line, prefix) {
				row = strings.TrimSuffix(strings.TrimPrefix(line, prefix), " |")
			}
		}
		if row == "" {
			t.Errorf("README: no default-workload row for %s", k.Name)
			continue
		}
		var want []string
		for _, c := range k.Workload {
			want = append(want, c.String())
		}
		if row != strings.Join(want, ", ") {
			t.Errorf("README's default workload of %s:\n  %s\nkerntune kernels:\n  %s", k.Name, row, strings.Join(want, ", "))
		}
	}
}

// readREADME returns the repository's README, which the tests above hold
// to what the commands print.
func readREADME(t *testing.T) string {
	t.Helper()
	return string(testutil.ReadFile(t, "../../README.md"))
}

// A syntax error in a spec's body exits 2 and cites the user's own file:
// the spec's line holding the body line, which is quoted, not the lines
// of the temporary file clang was given.
func TestCheckSpecSyntaxErrorCitesTheSpec(t *testing.T) {
	t.Parallel()
	mslcheck.Require(t)
	orig := testutil.ReadFile(t, "../../examples/swiglu.json")
	const good, bad = "const int total = rows * cols;", "const int total = rows * cols +;"
	at := strings.Index(string(orig), good)
	line := 1 + strings.Count(string(orig[:at]), "\n")
	path := testutil.WriteFile(t, t.TempDir(), "swiglu.json", strings.Replace(string(orig), good, bad, 1))
	code, out := runCLI(t, "check", "--spec", path, "--backend", "none")
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	for _, w := range []string{fmt.Sprintf("%s:%d (source.body line 2): error: expected expression", path, line), "\n        " + bad} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, ".metal:") {
		t.Errorf("output cites a generated file:\n%s", out)
	}
}
