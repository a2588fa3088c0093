package gpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kerntune/kerntune/kernels"
)

// clang finds a clang for the syntax checks: $KERNTUNE_CLANG, clang-14, clang.
// CI installs clang-14, and there the check is required (KTDEV_REQUIRE_CLANG=1).
func clang(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("KERNTUNE_CLANG"), "clang-14", "clang"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("KTDEV_REQUIRE_CLANG") != "" {
		t.Fatal("clang not found but KTDEV_REQUIRE_CLANG is set")
	}
	t.Skip("clang not found; the MSL syntax check needs clang (apt-get install clang-14)")
	return ""
}

// mslBatch wraps each candidate's source in its own namespace, with its
// #defines undone after it, so one clang run checks many candidates.
func mslBatch(srcs []string) string {
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\n")
	for i, s := range srcs {
		var defs []string
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "#define ") && !strings.Contains(line, "(") {
				if f := strings.Fields(line); len(f) == 3 {
					defs = append(defs, f[1])
				}
			}
		}
		s = strings.Replace(s, "#include <metal_stdlib>\n", "", 1)
		fmt.Fprintf(&b, "namespace kt_candidate_%d {\n%s\n}\n", i, s)
		for _, d := range defs {
			fmt.Fprintf(&b, "#undef %s\n", d)
		}
	}
	return b.String()
}

// TestMSLSyntax checks every generated MSL candidate of every family and
// dtype with clang against the shim header: 100% of the Metal space.
func TestMSLSyntax(t *testing.T) {
	cc := clang(t)
	shim, err := filepath.Abs(filepath.Join("testdata", "mslshim"))
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		name string
		srcs []string
	}
	var jobs []job
	total := 0
	for _, k := range kernels.All() {
		b, err := Get(k.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, dt := range kernels.DTypes {
			var srcs []string
			for _, c := range spaceOf(t, k) {
				s, err := b.SourceFor(Metal, dt, c)
				if err != nil {
					t.Fatal(err)
				}
				srcs = append(srcs, s)
			}
			total += len(srcs)
			for i := 0; i < len(srcs); i += 250 {
				jobs = append(jobs, job{fmt.Sprintf("%s_%s_%d", k.Name, dt, i/250), srcs[i:min(i+250, len(srcs))]})
			}
		}
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	errs := make(chan string, len(jobs))
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			path := filepath.Join(dir, j.name+".metal")
			if err := os.WriteFile(path, []byte(mslBatch(j.srcs)), 0o644); err != nil {
				errs <- err.Error()
				return
			}
			out, err := exec.Command(cc, "--target=aarch64-linux-gnu", "-x", "c++", "-std=c++17", "-fsyntax-only",
				"-Wno-unknown-attributes", "-ferror-limit=5", "-I", shim, path).CombinedOutput()
			if err != nil {
				errs <- fmt.Sprintf("%s: %v\n%s", j.name, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	t.Logf("MSL syntax check: %d candidates (every family, f32 and f16) in %d clang runs", total, len(jobs))
	line := fmt.Sprintf("MSL syntax check: %d candidates checked (100%% of the Metal candidates of every family, f32 and f16)", total)
	fmt.Println(line)
	// A passing package's output is hidden under go test ./...: CI reads the
	// count from this file.
	if f := os.Getenv("KTDEV_SUMMARY"); f != "" {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatalf("KTDEV_SUMMARY=%s: %v", f, err)
		}
		fmt.Fprintln(fh, line)
		fh.Close()
	}
}

// The check has teeth: a body with an identifier MSL lacks is rejected.
func TestMSLSyntaxRejectsBrokenBody(t *testing.T) {
	cc := clang(t)
	shim, _ := filepath.Abs(filepath.Join("testdata", "mslshim"))
	b := *bodies["softmax"]
	b.Source = strings.Replace(b.Source, "EXP(", "__expf(", 1) // a CUDA-only intrinsic
	k, _ := kernels.Get("softmax")
	ps, _ := k.Space("metal")
	src, err := b.SourceFor(Metal, kernels.F32, ps.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "broken.metal")
	os.WriteFile(path, []byte(src), 0o644)
	out, err := exec.Command(cc, "--target=aarch64-linux-gnu", "-x", "c++", "-std=c++17", "-fsyntax-only",
		"-Wno-unknown-attributes", "-I", shim, path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "__expf") {
		t.Fatalf("broken MSL passed the syntax check: %v\n%s", err, out)
	}
}
