package cudadrv

import (
	"path/filepath"
	"sort"
	"strings"
)

// Library file names, most preferred first. A bare name is resolved by the
// dynamic loader (LD_LIBRARY_PATH, the ld.so cache, the default paths).
var (
	cudaLibNames   = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcLibNames  = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}
	cublasLibNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"}
)

// targetsTriple is the CUDA toolkit's targets/<triple> directory name.
func targetsTriple(goarch string) string {
	switch goarch {
	case "arm64":
		return "sbsa-linux"
	case "ppc64le":
		return "ppc64le-linux"
	default:
		return "x86_64-linux"
	}
}

// multiarchDir is the Debian/Ubuntu multiarch library directory.
func multiarchDir(goarch string) string {
	switch goarch {
	case "arm64":
		return "/usr/lib/aarch64-linux-gnu"
	case "ppc64le":
		return "/usr/lib/powerpc64le-linux-gnu"
	default:
		return "/usr/lib/x86_64-linux-gnu"
	}
}

// searchDirs lists the directories tried after the bare name, in order:
// $CUDA_HOME, $CUDA_PATH and $CUDA_ROOT (lib64, then lib), every entry of
// $LD_LIBRARY_PATH, /usr/local/cuda (lib64 and targets/<triple>/lib), the
// versioned toolkits in versioned (newest first, as given), the container
// driver mount /usr/local/nvidia/lib64, the distribution library
// directories and WSL's /usr/lib/wsl/lib. Duplicates are dropped.
func searchDirs(getenv func(string) string, goarch string, versioned []string) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		d = strings.TrimSpace(d)
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	triple := targetsTriple(goarch)
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"} {
		if root := getenv(env); root != "" {
			add(filepath.Join(root, "lib64"))
			add(filepath.Join(root, "lib"))
			add(filepath.Join(root, "targets", triple, "lib"))
		}
	}
	for _, d := range strings.Split(getenv("LD_LIBRARY_PATH"), ":") {
		add(d)
	}
	add("/usr/local/cuda/lib64")
	add(filepath.Join("/usr/local/cuda/targets", triple, "lib"))
	for _, root := range versioned {
		add(filepath.Join(root, "lib64"))
		add(filepath.Join(root, "targets", triple, "lib"))
	}
	add("/usr/local/nvidia/lib64")
	add(multiarchDir(goarch))
	add("/usr/lib64")
	add("/usr/lib")
	add("/usr/lib/wsl/lib")
	return dirs
}

// versionedToolkits returns /usr/local/cuda-X.Y directories, newest first.
func versionedToolkits(glob func(string) ([]string, error)) []string {
	m, _ := glob("/usr/local/cuda-*")
	sort.Slice(m, func(i, j int) bool { return versionLess(m[j], m[i]) })
	return m
}

// versionLess orders "/usr/local/cuda-12.9" before "/usr/local/cuda-13.0"
// (numerically per dotted component).
func versionLess(a, b string) bool {
	va := strings.Split(strings.TrimPrefix(filepath.Base(a), "cuda-"), ".")
	vb := strings.Split(strings.TrimPrefix(filepath.Base(b), "cuda-"), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		na, ea := atoiOK(va[i])
		nb, eb := atoiOK(vb[i])
		if ea && eb && na != nb {
			return na < nb
		}
		if !(ea && eb) && va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return len(va) < len(vb)
}

func atoiOK(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// libraryCandidates returns the paths to try for one library: for each name
// in order of preference, the bare name first and then that name in every
// search directory. An explicit path (override) is tried alone.
func libraryCandidates(names, dirs []string, override string) []string {
	if override != "" {
		return []string{override}
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, c := range append([]string{n}, joinAll(dirs, n)...) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

func joinAll(dirs []string, name string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join(d, name)
	}
	return out
}

// companionGlobs returns, for a library found at an absolute path, the
// files in the same directory that it loads by soname at run time and that
// are therefore opened first (so the loader finds them already resident even
// without RUNPATH or LD_LIBRARY_PATH): libcublasLt for cuBLAS and the NVRTC
// builtins for NVRTC.
func companionGlobs(path string) []string {
	if !filepath.IsAbs(path) {
		return nil
	}
	dir, base := filepath.Split(path)
	switch {
	case strings.HasPrefix(base, "libcublas.so"):
		return []string{filepath.Join(dir, "libcublasLt"+strings.TrimPrefix(base, "libcublas"))}
	case strings.HasPrefix(base, "libnvrtc.so"):
		ver := strings.TrimPrefix(base, "libnvrtc.so")
		return []string{filepath.Join(dir, "libnvrtc-builtins.so"+ver+"*")}
	}
	return nil
}
