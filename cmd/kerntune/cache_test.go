package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/internal/testutil"
)

func TestCacheFillsItsOptions(t *testing.T) {
	var out, errOut syncBuffer
	f := testFactory(&out, &errOut)
	tests := []struct {
		args []string
		want CacheOptions
	}{
		{nil, CacheOptions{IO: f.IO}},
		{[]string{"clear", "--json"}, CacheOptions{IO: f.IO, Clear: true, JSON: true}},
	}
	for _, tt := range tests {
		var got CacheOptions
		cmd := NewCmdCache(f, func(o *CacheOptions) error { got = *o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: options %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

// kerntune cache shows the entries and size, clear empties the cache, and
// looking at a cache never used creates nothing.
func TestCacheCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kernels")
	t.Setenv(compilecache.EnvDir, dir)
	t.Setenv(compilecache.EnvNoCache, "")
	t.Setenv(compilecache.EnvMax, "64MiB")
	if code, out, errOut := runIn("cache"); code != 0 || !strings.Contains(out, "entries    0") {
		t.Fatalf("empty cache: exit %d, %q %q", code, out, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("looking created the directory: %v", err)
	}
	c, err := compilecache.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"a", "b"} {
		if err := c.Store(compilecache.Key{API: "cuda", Source: src}, []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runIn("cache", "--json")
	if code != 0 {
		t.Fatalf("exit %d, %q %q", code, out, errOut)
	}
	var rep cacheReport
	testutil.DecodeJSON(t, out, &rep)
	if rep.Dir != dir || rep.Entries != 2 || rep.Bytes == 0 || rep.MaxBytes != 64<<20 || rep.Off {
		t.Fatalf("report %+v", rep)
	}
	code, out, _ = runIn("cache", "clear")
	if code != 0 || !strings.Contains(out, "removed 2 entries") || !strings.Contains(out, "entries    0") {
		t.Fatalf("clear: exit %d, %q", code, out)
	}
	if code, _, errOut := runIn("cache", "purge"); code != exitUsage {
		t.Fatalf("cache purge: exit %d (%s), want %d", code, errOut, exitUsage)
	}
}

// --no-cache turns the cache off for the process and the workers it
// starts, through the environment they inherit.
func TestNoCacheFlag(t *testing.T) {
	t.Setenv(compilecache.EnvNoCache, "")
	cmd := NewCmdTune(testFactory(&syncBuffer{}, &syncBuffer{}), func(*TuneOptions) error { return nil })
	cmd.SetArgs([]string{"--backend", "cpu", "--no-cache"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !compilecache.Off() {
		t.Fatalf("%s=%q after --no-cache", compilecache.EnvNoCache, os.Getenv(compilecache.EnvNoCache))
	}
}

// A KERNTUNE_CACHE_DIR that cannot be a directory is the user's input:
// exit 2, naming the variable.
func TestCacheDirNotADirectory(t *testing.T) {
	file := testutil.WriteFile(t, t.TempDir(), "plain", "x")
	for _, dir := range []string{"/dev/null/x", file} {
		t.Setenv(compilecache.EnvDir, dir)
		code, _, errOut := runIn("cache")
		if code != exitUsage || !strings.Contains(errOut, compilecache.EnvDir+"="+dir) || !strings.Contains(errOut, "must name a directory") {
			t.Errorf("%s=%s: exit %d, %q; want %d naming the variable", compilecache.EnvDir, dir, code, errOut, exitUsage)
		}
	}
}
