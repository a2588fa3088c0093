// Command archfig computes the figures of docs/architecture.md from the
// tree, so that they cannot drift from it: Go files and lines per package,
// test files and lines, a count of duplicated code, and the files per kind
// of addition that the trial scripts (scripts/trial_family.sh,
// scripts/trial-backend.sh) add or edit, read from the scripts themselves;
// the doc's "**N files**, checked by `script`" must say the same. It prints the
// figures block, writes it into the doc between the markers (-w), or fails
// when the doc's block differs from what the tree gives (-check).
//
//	go run ./scripts/archfig          # print the block
//	go run ./scripts/archfig -w       # make figures
//	go run ./scripts/archfig -check   # make check-figures
//
// # What is counted
//
// Every .go file under the module root, whatever its build constraints (so
// the figures are the same on every platform), except under testdata,
// directories whose name starts with "." or "_" (which the go tool ignores
// too) and directories holding another module (their own go.mod). A package
// is a directory. Lines are physical lines, as wc -l counts them. A file
// whose header holds the standard "// Code generated ... DO NOT EDIT." line
// (tuner/cpu's kern_*_kernels.go and kern_gemm_micro.go) is left out of the
// lines and of the duplicates and listed on its own: what a person edits is
// its generator.
//
// # Duplicates
//
// Our own measure, defined here and nowhere else. Each non-generated file,
// tests included, is read as its sequence of significant lines: every line
// trimmed of surrounding white space, without blank lines, comment-only
// lines (starting with // or inside a /* */ comment that starts a line),
// the package clause and the import declarations (files share import lists
// without sharing code). A duplicate is a pair of places, in the same file
// or two files, whose significant lines agree over a run of at least
// MinRun lines and disagree (or the file ends) just before and just after
// it: a longer run is one pair, not one per window of MinRun lines. Two
// places of one file count only when they start at least MinRun lines
// apart, and their run is cut where the first would reach the second. A
// block that appears in three places makes three pairs. The block gives the pairs in all, the pairs whose both places are
// non-test code, and the longest run.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// MinRun is the shortest run of significant lines that counts as a duplicate.
const MinRun = 6

// The markers around the generated block in the doc.
const (
	beginMarker = "<!-- figures:begin: written by `make figures`, compared by `make check` -->"
	endMarker   = "<!-- figures:end -->"
)

const defaultDoc = "docs/architecture.md"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("archfig", flag.ContinueOnError)
	fl.SetOutput(stderr)
	root := fl.String("root", ".", "module root to count")
	doc := fl.String("doc", defaultDoc, "the doc holding the figures block, relative to -root")
	write := fl.Bool("w", false, "write the block into the doc")
	check := fl.Bool("check", false, "fail when the doc's block differs from the tree's")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 || (*write && *check) {
		fmt.Fprintln(stderr, "usage: archfig [-root DIR] [-doc FILE] [-w | -check]")
		return 2
	}
	figs, err := collect(os.DirFS(*root))
	if err != nil {
		fmt.Fprintln(stderr, "archfig:", err)
		return 1
	}
	block := figs.markdown()
	if !*write && !*check {
		fmt.Fprint(stdout, block)
		return 0
	}
	docPath := *doc
	if !filepath.IsAbs(docPath) {
		docPath = filepath.Join(*root, docPath)
	}
	text, err := os.ReadFile(docPath)
	if err != nil {
		fmt.Fprintln(stderr, "archfig:", err)
		return 1
	}
	old, err := extract(text)
	if err != nil {
		fmt.Fprintf(stderr, "archfig: %s: %v\n", *doc, err)
		return 1
	}
	fixed := figs.proseCounts(text)
	if *check {
		stale := false
		for _, a := range figs.additions {
			if n, ok := proseCount(text, a.script); ok && n != len(a.files) {
				fmt.Fprintf(stderr, "%s: says **%d files**, checked by `%s`; the script adds or edits %d\n", *doc, n, a.script, len(a.files))
				stale = true
			}
		}
		if old == block && !stale {
			return 0
		}
		fmt.Fprintf(stderr, "%s: the figures block is stale; the tree gives (- doc, + tree):\n%s", *doc, lineDiff(old, block))
		fmt.Fprintln(stderr, "regenerate it with: make figures (go run ./scripts/archfig -w)")
		return 1
	}
	if old == block && bytes.Equal(fixed, text) {
		return 0
	}
	if err := os.WriteFile(docPath, replace(fixed, block), 0o644); err != nil {
		fmt.Fprintln(stderr, "archfig:", err)
		return 1
	}
	return 0
}

// pkgFigures are one directory's counts.
type pkgFigures struct {
	files, lines         int
	testFiles, testLines int
}

// figures are the tree's counts.
type figures struct {
	pkgs      map[string]*pkgFigures
	generated []genFile
	dups      dupFigures
	additions []addition
}

// addition is a kind of addition that a trial script makes to a scratch
// copy of the tree, and the files it adds or edits there.
type addition struct {
	kind, script string
	files        []string
}

// trialScripts are the scripts that add a kind of thing the way
// docs/architecture.md's "Where a change goes" says.
var trialScripts = []struct{ kind, script string }{
	{"a kernel family", "scripts/trial_family.sh"},
	{"a backend that reuses a generated API", "scripts/trial-backend.sh"},
}

// trialWriteRE finds the files a trial script writes in its copy: a here
// document (cat > FILE), a copy (cp SRC FILE) or an edit (sed -i ... FILE),
// each at the start of a line; a path holding a variable is the copy of the
// tree itself, not an addition.
var trialWriteRE = regexp.MustCompile(`(?m)^(?:cat > (\S+) <<|cp (?:-\S+ )*\S+ (\S+)$|sed -i '[^']*' (\S+)$)`)

// proseRE finds the count the prose gives for a trial script's addition.
func proseRE(script string) *regexp.Regexp {
	return regexp.MustCompile(`\*\*(\d+) files\*\*, checked by\s+` + "`" + regexp.QuoteMeta(script) + "`")
}

// proseCount is the number of files the doc's prose gives for script's addition.
func proseCount(doc []byte, script string) (int, bool) {
	m := proseRE(script).FindSubmatch(doc)
	if m == nil {
		return 0, false
	}
	n := 0
	fmt.Sscan(string(m[1]), &n)
	return n, true
}

// proseCounts is doc with the prose's counts of the trial additions set to
// what the scripts add.
func (f figures) proseCounts(doc []byte) []byte {
	for _, a := range f.additions {
		re := proseRE(a.script)
		doc = re.ReplaceAllFunc(doc, func(m []byte) []byte {
			sub := re.FindSubmatchIndex(m)
			return append(append(append([]byte{}, m[:sub[2]]...), fmt.Sprint(len(a.files))...), m[sub[3]:]...)
		})
	}
	return doc
}

// trialFiles lists the files script writes, sorted.
func trialFiles(script []byte) []string {
	seen := map[string]bool{}
	for _, m := range trialWriteRE.FindAllSubmatch(script, -1) {
		f := string(m[1]) + string(m[2]) + string(m[3])
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

type genFile struct {
	path  string
	lines int
}

// source is one non-generated file as the duplicate counter sees it.
type source struct {
	path string
	test bool
	sig  []string // significant lines
	at   []int    // their line numbers, 1-based
}

// generatedRE is the convention of go help generate.
var generatedRE = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// collect reads every counted file of fsys.
func collect(fsys fs.FS) (figures, error) {
	figs := figures{pkgs: map[string]*pkgFigures{}}
	for _, t := range trialScripts {
		data, err := fs.ReadFile(fsys, t.script)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a tree without it (the tests' trees)
		}
		if err != nil {
			return figs, err
		}
		figs.additions = append(figs.additions, addition{t.kind, t.script, trialFiles(data)})
	}
	var srcs []source
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return fs.SkipDir
			}
			if p != "." {
				if _, err := fs.Stat(fsys, path.Join(p, "go.mod")); err == nil {
					return fs.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		n := countLines(data)
		if isGenerated(data) {
			figs.generated = append(figs.generated, genFile{p, n})
			return nil
		}
		dir := path.Dir(p)
		pf := figs.pkgs[dir]
		if pf == nil {
			pf = &pkgFigures{}
			figs.pkgs[dir] = pf
		}
		test := strings.HasSuffix(p, "_test.go")
		if test {
			pf.testFiles++
			pf.testLines += n
		} else {
			pf.files++
			pf.lines += n
		}
		sig, at := significant(data)
		srcs = append(srcs, source{path: p, test: test, sig: sig, at: at})
		return nil
	})
	if err != nil {
		return figures{}, err
	}
	figs.dups = duplicates(srcs, MinRun)
	return figs, nil
}

func countLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// isGenerated reports whether the generated-code line comes before the
// package clause, where go help generate puts it.
func isGenerated(data []byte) bool {
	head := data
	if bytes.HasPrefix(data, []byte("package ")) {
		head = nil
	} else if i := bytes.Index(data, []byte("\npackage ")); i >= 0 {
		head = data[:i+1]
	}
	return generatedRE.Match(head)
}

// significant returns the lines the duplicate counter compares, with their
// line numbers; see the package doc.
func significant(data []byte) (sig []string, at []int) {
	inComment, inImport := false, false
	for i, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case inComment:
			inComment = !strings.Contains(l, "*/")
			continue
		case strings.HasPrefix(l, "/*"):
			inComment = !strings.Contains(l[2:], "*/")
			continue
		case inImport:
			inImport = l != ")"
			continue
		case l == "" || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "package "):
			continue
		case strings.HasPrefix(l, "import"):
			inImport = strings.HasSuffix(l, "(")
			continue
		}
		sig = append(sig, l)
		at = append(at, i+1)
	}
	return sig, at
}

// dupFigures sum up the duplicate pairs.
type dupFigures struct {
	pairs     int // pairs of places sharing a run of at least MinRun lines
	codePairs int // of them, pairs whose both places are non-test files
	longest   int // the longest run, in significant lines
	where     string
}

// place is a position in a source: its index and a significant line.
type place struct{ src, line int }

// duplicates counts the pairs of places of srcs that share a run of at
// least minRun significant lines. Every pair is found through its first
// window of minRun lines (the one whose predecessors differ), so that a
// longer run is one pair, not one per window.
func duplicates(srcs []source, minRun int) dupFigures {
	windows := map[string][]place{}
	for s, src := range srcs {
		for i := 0; i+minRun <= len(src.sig); i++ {
			k := strings.Join(src.sig[i:i+minRun], "\n")
			windows[k] = append(windows[k], place{s, i})
		}
	}
	var d dupFigures
	for _, ps := range windows {
		for x := 0; x < len(ps); x++ {
			for y := x + 1; y < len(ps); y++ {
				a, b := ps[x], ps[y]
				sa, sb := srcs[a.src].sig, srcs[b.src].sig
				if a.src == b.src && b.line-a.line < minRun {
					continue // overlapping places of one file
				}
				if a.line > 0 && b.line > 0 && sa[a.line-1] == sb[b.line-1] {
					continue // not the run's first window: counted there
				}
				n := minRun
				for a.line+n < len(sa) && b.line+n < len(sb) && sa[a.line+n] == sb[b.line+n] &&
					(a.src != b.src || a.line+n < b.line) {
					n++
				}
				d.pairs++
				if !srcs[a.src].test && !srcs[b.src].test {
					d.codePairs++
				}
				w := fmt.Sprintf("%s:%d and %s:%d", srcs[a.src].path, srcs[a.src].at[a.line],
					srcs[b.src].path, srcs[b.src].at[b.line])
				if n > d.longest || (n == d.longest && w < d.where) {
					d.longest, d.where = n, w
				}
			}
		}
	}
	return d
}

// markdown is the block between the markers, markers included.
func (f figures) markdown() string {
	var b strings.Builder
	fmt.Fprintln(&b, beginMarker)
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| package | files | lines | test files | test lines |")
	fmt.Fprintln(&b, "| --- | ---: | ---: | ---: | ---: |")
	dirs := make([]string, 0, len(f.pkgs))
	for d := range f.pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var total pkgFigures
	for _, d := range dirs {
		p := f.pkgs[d]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", d, p.files, p.lines, p.testFiles, p.testLines)
		total.files += p.files
		total.lines += p.lines
		total.testFiles += p.testFiles
		total.testLines += p.testLines
	}
	fmt.Fprintf(&b, "| **all %d packages** | %d | %d | %d | %d |\n", len(dirs), total.files, total.lines, total.testFiles, total.testLines)
	fmt.Fprintln(&b)
	genLines := 0
	names := make([]string, len(f.generated))
	for i, g := range f.generated {
		genLines += g.lines
		names[i] = "`" + g.path + "`"
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "Left out as generated (%d files, %d lines): %s.\n", len(f.generated), genLines, strings.Join(names, ", "))
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "Duplicates: %d pairs of places sharing a run of %d or more significant lines, %d of them between non-test files",
		f.dups.pairs, MinRun, f.dups.codePairs)
	if f.dups.longest > 0 {
		fmt.Fprintf(&b, "; the longest run is %d lines (%s)", f.dups.longest, f.dups.where)
	}
	fmt.Fprintln(&b, ".")
	fmt.Fprintln(&b)
	if len(f.additions) > 0 {
		fmt.Fprintln(&b, "Files per kind of addition, as the trial scripts make it to a scratch copy of the tree:")
		fmt.Fprintln(&b)
		fmt.Fprintln(&b, "| addition | files | added or edited | made by |")
		fmt.Fprintln(&b, "| --- | ---: | --- | --- |")
		for _, a := range f.additions {
			fmt.Fprintf(&b, "| %s | %d | `%s` | `%s` |\n", a.kind, len(a.files), strings.Join(a.files, "`, `"), a.script)
		}
		fmt.Fprintln(&b)
	}
	fmt.Fprintln(&b, endMarker)
	return b.String()
}

// extract returns the doc's block, markers included.
func extract(doc []byte) (string, error) {
	s := string(doc)
	i := strings.Index(s, beginMarker)
	if i < 0 {
		return "", errors.New("no line " + beginMarker)
	}
	j := strings.Index(s[i:], endMarker)
	if j < 0 {
		return "", errors.New("no line " + endMarker + " after " + beginMarker)
	}
	end := i + j + len(endMarker)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	return s[i:end], nil
}

// replace puts block in place of the doc's block; extract must have
// succeeded on doc.
func replace(doc []byte, block string) []byte {
	old, _ := extract(doc)
	return []byte(strings.Replace(string(doc), old, block, 1))
}

// lineDiff lists the lines of old missing from new (-) and those of new
// missing from old (+), in order: enough to name what changed in a table.
func lineDiff(old, new string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	inOld, inNew := count(old), count(new)
	var b strings.Builder
	for _, l := range strings.Split(old, "\n") {
		if inNew[l] > 0 {
			inNew[l]--
			continue
		}
		fmt.Fprintf(&b, "- %s\n", l)
	}
	for _, l := range strings.Split(new, "\n") {
		if inOld[l] > 0 {
			inOld[l]--
			continue
		}
		fmt.Fprintf(&b, "+ %s\n", l)
	}
	return b.String()
}
