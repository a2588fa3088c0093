package metal

import (
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
	pruneClosed(counts)
	if len(counts) != 1 || counts[open] != 4 {
		t.Errorf("counts after pruning: %v; want only the open instance's 4", counts)
	}
}
