package archcheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module is the import path of the repository's module.
const module = "github.com/kerntune/kerntune/"

// layerRules says, per package (a directory, or a prefix ending in "/"
// for a directory's subpackages), the packages of ours its non-test files
// must not import: nothing runs back up the house. Test files may reach
// further (an external test package imports what it checks against).
var layerRules = []struct {
	pkg       string
	forbidden []string // package paths or prefixes ending in "/"; "*" is every package of ours
	allowed   []string // exceptions to forbidden, written the same way
}{
	// params and its subpackages import only the standard library and
	// each other.
	{"params", []string{"*"}, []string{"params/", "family"}},
	{"params/", []string{"*"}, []string{"params/", "family"}},
	// family embeds the folder families' descriptions, data the loaders
	// read: it imports nothing of ours. A folder family may import the
	// layers it registers with, never the engine or a command.
	{"family", []string{"*"}, nil},
	{"family/", []string{"tuner", "spec", "report", "cmd/"}, nil},
	{"internal/", []string{"kernels", "kernels/", "spec", "tuner", "tuner/", "report", "cmd/", "scripts/"}, nil},
	{"search", []string{"kernels", "kernels/", "spec", "tuner", "tuner/", "report", "cmd/"}, nil},
	{"search/", []string{"kernels", "kernels/", "spec", "tuner", "tuner/", "report", "cmd/"}, nil},
	{"kernels", []string{"spec", "tuner", "tuner/", "report", "cmd/"}, nil},
	{"kernels/", []string{"spec", "tuner", "tuner/", "report", "cmd/"}, nil},
	{"spec", []string{"tuner", "tuner/", "report", "cmd/"}, nil},
	{"report", []string{"kernels", "kernels/", "spec", "tuner", "tuner/", "cmd/"}, nil},
	{"tuner", []string{"tuner/cpu", "tuner/cuda", "tuner/metal", "tuner/opencl", "tuner/worker", "cmd/"}, nil},
	{"tuner/", []string{"cmd/"}, nil},
	// The device contract is a leaf of the tuner: backends and the engine
	// import it, it imports neither.
	{"tuner/device", []string{"spec", "tuner", "tuner/", "report", "cmd/"}, nil},
	// A backend sees the contract, never the engine or another backend.
	{"tuner/cpu", backendForbidden, nil},
	{"tuner/cuda", backendForbidden, nil},
	{"tuner/metal", backendForbidden, nil},
	{"tuner/opencl", backendForbidden, nil},
}

// backendForbidden are the packages a backend must not import.
var backendForbidden = []string{"tuner", "tuner/worker", "tuner/cpu", "tuner/cuda", "tuner/metal", "tuner/opencl", "spec", "report", "cmd/"}

func matches(pkg, pattern string) bool {
	if pattern == "*" {
		return true
	}
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(pkg, pattern)
	}
	return pkg == pattern
}

func matchesAny(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if matches(pkg, p) {
			return true
		}
	}
	return false
}

// ourImports lists, per package directory under root, the packages of
// this module its non-test files import.
func ourImports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "python") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		for _, im := range f.Imports {
			ip := strings.Trim(im.Path.Value, `"`)
			if strings.HasPrefix(ip, module) {
				if out[pkg] == nil {
					out[pkg] = map[string]bool{}
				}
				out[pkg][strings.TrimPrefix(ip, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLayers holds the packages to their layers: params and its
// subpackages import only the standard library and each other,
// internal/* nothing above it, search nothing of kernels or the
// tuner, kernels and spec nothing of the tuner or the CLI, the tuner no
// backend, and nothing the CLI.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	imports := ourImports(t, root)
	if len(imports["cmd/kerntune"]) == 0 || len(imports["tuner/cpu"]) == 0 {
		t.Fatalf("read no imports of cmd/kerntune or tuner/cpu: %v", imports)
	}
	for pkg, ims := range imports {
		for _, r := range layerRules {
			if !matches(pkg, r.pkg) {
				continue
			}
			for im := range ims {
				for _, bad := range r.forbidden {
					if matches(im, bad) && !matchesAny(im, r.allowed) {
						t.Errorf("%s imports %s: %s must not import %s", pkg, im, r.pkg, bad)
					}
				}
			}
		}
	}
}

// TestLayerRulesCatch checks the rules on a made-up graph: an import
// that runs back up is reported.
func TestLayerRulesCatch(t *testing.T) {
	violates := func(pkg, im string) bool {
		for _, r := range layerRules {
			if matches(pkg, r.pkg) {
				for _, bad := range r.forbidden {
					if matches(im, bad) && !matchesAny(im, r.allowed) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, c := range []struct {
		pkg, im string
		bad     bool
	}{
		{"params", "internal/stats", true},
		{"params/families", "family", false},
		{"family", "params/families", true},
		{"family/twice", "tuner/cpu", false},
		{"family/twice", "tuner", true},
		{"params", "params/families", false},
		{"params/paramfile", "params/families", false},
		{"params/families", "kernels", true},
		{"params/paramfile", "internal/testutil", true},
		{"internal/trace", "tuner", true},
		{"internal/t4", "params", false},
		{"search", "tuner/cpu", true},
		{"kernels/gpu", "tuner", true},
		{"kernels/gpu", "search", false},
		{"spec", "tuner/cuda", true},
		{"tuner", "tuner/metal", true},
		{"tuner/cuda", "tuner", true},
		{"tuner/cuda", "tuner/device", false},
		{"tuner/cuda", "tuner/metal", true},
		{"tuner/cuda", "tuner/internal/gpuhost", false},
		{"tuner/device", "tuner", true},
		{"tuner/device", "kernels/gpu", false},
		{"tuner/worker", "tuner", false},
		{"tuner/cuda", "cmd/kerntune", true},
	} {
		if got := violates(c.pkg, c.im); got != c.bad {
			t.Errorf("%s imports %s: reported %v, want %v", c.pkg, c.im, got, c.bad)
		}
	}
}

// TestFamilyFolders: a family that lives in its own folder is added by the
// folder and one import line: family/all imports every folder, and no
// other package of ours names it (tests may, to test it).
func TestFamilyFolders(t *testing.T) {
	r := root(t)
	entries, err := os.ReadDir(filepath.Join(r, "family"))
	if err != nil {
		t.Fatal(err)
	}
	imports := ourImports(t, r)
	n := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "all" {
			continue
		}
		n++
		pkg := "family/" + e.Name()
		if !imports["family/all"][pkg] {
			t.Errorf("family/all does not import %s", pkg)
		}
		for from, ims := range imports {
			if ims[pkg] && from != "family/all" {
				t.Errorf("%s imports %s: only family/all may, so that a family is one folder and one import line", from, pkg)
			}
		}
	}
	if n == 0 {
		t.Error("no family folder found; family/twice is the example")
	}
}
