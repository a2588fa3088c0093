package metal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"go/ast"
	"go/format"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/tuner/internal/gpuhost"
)

// hostDevice keeps buffers in host memory: a stand-in for the Metal
// device where a test needs real instances.
type hostDevice struct{}

type hostMemory struct{}

func (hostDevice) Memory(f func(gpuhost.Memory[*[]byte]) error) error { return f(hostMemory{}) }

func (hostMemory) Alloc(n int) (*[]byte, error)        { b := make([]byte, n); return &b, nil }
func (hostMemory) Write(dst *[]byte, src []byte) error { copy(*dst, src); return nil }
func (hostMemory) Read(dst []byte, src *[]byte) error  { copy(dst, *src); return nil }
func (hostMemory) Free(*[]byte) error                  { return nil }
func (hostMemory) Fill(dst *[]byte, word uint32, words int) error {
	gpuhost.FillWords((*dst)[:4*words], word)
	return nil
}

// A program's runs-per-command-buffer counts forget the instances closed
// since its last timing, and keep the open ones.
func TestPruneClosed(t *testing.T) {
	k, err := kernels.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	load := func() *gpuhost.Instance[*[]byte] {
		p, err := kernels.NewSeededProblem(k, kernels.F32, kernels.Case{Shape: []int{2, 8}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		in, err := gpuhost.Load[*[]byte](hostDevice{}, p, 1, "host")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	open, closed := load(), load()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	counts := map[*gpuhost.Instance[*[]byte]]int{open: 4, closed: 8}
	gpuhost.PruneClosed(counts)
	if len(counts) != 1 || counts[open] != 4 {
		t.Errorf("counts after pruning: %v; want only the open instance's 4", counts)
	}
}

// Buffers are private where the GPU's memory is not unified (an Intel
// Mac's discrete GPU), allocated with MTLResourceStorageModePrivate
// (MTLStorageModePrivate 2 << MTLResourceStorageModeShift 4), and shared
// on Apple silicon.
func TestStorageFor(t *testing.T) {
	for _, tc := range []struct {
		unified bool
		want    storageMode
		options uint64
	}{
		{true, storageShared, 0},
		{false, storagePrivate, 32},
	} {
		s := storageFor(tc.unified)
		if s != tc.want || s.resourceOptions() != tc.options {
			t.Errorf("unified memory %v: %s storage, options %d; want %s, %d", tc.unified, s, s.resourceOptions(), tc.want, tc.options)
		}
	}
}

// fakeGPU records a stager's calls and keeps its buffers' bytes: the
// private buffers as the GPU would, the staging ones as the CPU maps them.
type fakeGPU struct {
	mem   map[int][]byte
	next  int
	calls []string
	live  int // staging buffers not released
}

func (g *fakeGPU) private(size int) int {
	g.next++
	g.mem[g.next] = make([]byte, size)
	return g.next
}

func (g *fakeGPU) staging(n int) (int, []byte, error) {
	id := g.private(n)
	g.live++
	g.calls = append(g.calls, fmt.Sprintf("staging %d", n))
	return id, g.mem[id], nil
}

func (g *fakeGPU) release(id int) {
	g.live--
	delete(g.mem, id)
	g.calls = append(g.calls, "release")
}

func (g *fakeGPU) blit(src, dst, n int) error {
	if n%4 != 0 || n > len(g.mem[src]) || n > len(g.mem[dst]) {
		return fmt.Errorf("blit of %d bytes from %d to %d bytes", n, len(g.mem[src]), len(g.mem[dst]))
	}
	copy(g.mem[dst], g.mem[src][:n])
	g.calls = append(g.calls, fmt.Sprintf("blit %d", n))
	return nil
}

// A private buffer is written, read and filled through a shared staging
// buffer and one waited blit each, of sizes rounded up to 4 bytes within
// the buffer, and the staging buffer is released.
func TestPrivateBufferStaging(t *testing.T) {
	g := &fakeGPU{mem: map[int][]byte{}}
	buf := g.private(32)
	src := []byte{1, 2, 3, 4, 5, 6, 7}
	if err := writeVia[int](g, buf, 32, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.mem[buf][:7], src) {
		t.Errorf("buffer holds %v after the write, want %v first", g.mem[buf], src)
	}
	got := make([]byte, 7)
	if err := readVia[int](g, got, buf, 32); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Errorf("read back %v, want %v", got, src)
	}
	if err := fillWordsVia[int](g, buf, 32, 0x7fc00000, 8); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 32; i += 4 {
		if w := binary.LittleEndian.Uint32(g.mem[buf][i:]); w != 0x7fc00000 {
			t.Fatalf("word %d is %#x after the fill", i/4, w)
		}
	}
	want := []string{"staging 8", "blit 8", "release", "staging 8", "blit 8", "release", "staging 32", "blit 32", "release"}
	if !slices.Equal(g.calls, want) || g.live != 0 {
		t.Errorf("calls %q (%d staging buffers left); want %q", g.calls, g.live, want)
	}
	if err := writeVia[int](g, buf, 32, make([]byte, 33)); err == nil {
		t.Error("a write past the buffer's end was accepted")
	}
}

// The darwin device allocates problems' buffers in the device's storage
// (private where memory is not unified) and untracked, and every buffer operation on a
// problem's buffer takes the staging path for a private one: the source
// is checked, as no Mac with a discrete GPU runs the tests.
func TestDeviceUsesStorage(t *testing.T) {
	src := parseBackend(t)
	methods := map[string]string{}
	for _, f := range src.files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "buffers" {
				var b strings.Builder
				if err := format.Node(&b, src.fset, fd.Body); err != nil {
					t.Fatal(err)
				}
				methods[fd.Name.Name] = b.String()
			}
		}
	}
	for m, want := range map[string]string{
		"Alloc": "newBufferOpts(n, d.b.storage, true)", // untracked, as MLX's arrays
		"Read":  "readVia[buffer](d,",
		"Write": "writeVia[buffer](d,",
		"Fill":  "fillWordsVia[buffer](d,",
	} {
		body, ok := methods[m]
		if !ok {
			t.Errorf("buffers.%s not found", m)
			continue
		}
		if !strings.Contains(body, want) {
			t.Errorf("device.%s does not call %s:\n%s", m, want, body)
		}
	}
}
