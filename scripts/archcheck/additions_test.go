package archcheck

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// doc is the page whose statements these tests hold, relative to the root.
const doc = "docs/design/architecture.md"

// trialScripts are the scripts that make each kind of addition in a
// scratch copy of the tree; the page gives their file counts.
var trialScripts = []string{"scripts/trial_family.sh", "scripts/trial-backend.sh"}

// trialWriteRE finds the files a trial script writes in its copy: a here
// document (cat > FILE), a copy (cp SRC FILE), an edit (sed -i ... FILE)
// or a derived copy (sed ... SRC > FILE), each at the start of a line; a
// path holding a variable is the copy of the tree itself, not an addition.
var trialWriteRE = regexp.MustCompile(`(?m)^(?:cat > (\S+) <<|cp (?:-\S+ )*\S+ (\S+)$|sed -i '[^']*' (\S+)$|sed (?:'[^']*'|"[^"]*") \S+ > (\S+)$)`)

// trialFiles lists the files script writes, sorted.
func trialFiles(script []byte) []string {
	seen := map[string]bool{}
	for _, m := range trialWriteRE.FindAllSubmatch(script, -1) {
		f := string(m[1]) + string(m[2]) + string(m[3]) + string(m[4])
		if !strings.Contains(f, "$") {
			seen[f] = true
		}
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	sort.Strings(files)
	return files
}

// proseCounts are the counts the page gives for script's addition:
// "**N files**, checked by `script`".
func proseCounts(page []byte, script string) []int {
	re := regexp.MustCompile(`\*\*(\d+) files\*\*, checked by\s+` + "`" + regexp.QuoteMeta(script) + "`")
	var out []int
	for _, m := range re.FindAllSubmatch(page, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		out = append(out, n)
	}
	return out
}

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTrialAdditions: each "**N files**, checked by `script`" of the page
// is the number of files the script adds or edits.
func TestTrialAdditions(t *testing.T) {
	r := root(t)
	page, err := os.ReadFile(filepath.Join(r, doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range trialScripts {
		script, err := os.ReadFile(filepath.Join(r, s))
		if err != nil {
			t.Fatal(err)
		}
		files := trialFiles(script)
		if len(files) == 0 {
			t.Fatalf("%s writes no files that trialWriteRE finds", s)
		}
		counts := proseCounts(page, s)
		if len(counts) == 0 {
			t.Errorf("%s gives no \"**N files**, checked by `%s`\"", doc, s)
		}
		for _, n := range counts {
			if n != len(files) {
				t.Errorf("%s says **%d files**, checked by `%s`; the script adds or edits %d: %s", doc, n, s, len(files), strings.Join(files, ", "))
			}
		}
	}
}

// The parsing above, on a made-up script and page.
func TestTrialParsing(t *testing.T) {
	script := []byte("cp -P --parents \"$f\" \"$tree/\"\ncat > params/families/x.json <<'EOF'\n{}\nEOF\n" +
		"cp scripts/testdata/b.go tuner/x/backend.go\nsed -i 's|a|b|' params/families.go\nsed -i 's|c|d|' params/families.go\n")
	if got, want := strings.Join(trialFiles(script), " "), "params/families.go params/families/x.json tuner/x/backend.go"; got != want {
		t.Fatalf("trialFiles = %q, want %q", got, want)
	}
	page := []byte("adds **2 files**, checked by\n`scripts/trial_family.sh`, which")
	if got := proseCounts(page, "scripts/trial_family.sh"); len(got) != 1 || got[0] != 2 {
		t.Fatalf("proseCounts = %v", got)
	}
}
