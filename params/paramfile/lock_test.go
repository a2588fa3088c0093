package paramfile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/kerntune/kerntune/params/families"
)

// writerUpdate is writer i's contribution: its own device and, on a device
// shared by all writers, its own kernel entry.
func writerUpdate(i int) *File {
	entry := func() *Entry {
		return &Entry{Params: map[string]int{"BN": 8 * (i + 1)}, MedianUS: float64(i + 1), Shapes: [][]int{{1, 8, 8}}}
	}
	return &File{SchemaVersion: SchemaVersion, Devices: map[string]*Device{
		fmt.Sprintf("cpu:writer-%d", i): {Backend: "cpu", Name: "w", Family: "amd64",
			Kernels: map[string]map[string]*Entry{families.GemvNT: {"f32/tiny": entry()}}},
		"cpu:shared": {Backend: "cpu", Name: "shared", Family: "amd64",
			Kernels: map[string]map[string]*Entry{families.GemvNT: {fmt.Sprintf("f32/1x%dx8", i+1): entry()}}},
	}}
}

// TestConcurrentWriterProcess is the body of one writer process started by
// TestMergeIntoFileConcurrentWriters; it does nothing when run directly.
func TestConcurrentWriterProcess(t *testing.T) {
	path, idx := os.Getenv("KTDEV_MERGE_PATH"), os.Getenv("KTDEV_MERGE_INDEX")
	if path == "" {
		t.Skip("run as a writer process by TestMergeIntoFileConcurrentWriters")
	}
	i, err := strconv.Atoi(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := MergeIntoFile(path, writerUpdate(i), false); err != nil {
		t.Fatal(err)
	}
}

// Many writers, half of them goroutines and half separate processes, merge
// into one file at once; every entry must be there and the file valid.
func TestMergeIntoFileConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultFileName)
	const goroutines, procs = 12, 12
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines+procs)
	for i := 0; i < goroutines+procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i < goroutines {
				errs <- MergeIntoFile(path, writerUpdate(i), false)
				return
			}
			cmd := exec.Command(exe, "-test.run=^TestConcurrentWriterProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "KTDEV_MERGE_PATH="+path, "KTDEV_MERGE_INDEX="+strconv.Itoa(i))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("writer process %d: %v\n%s", i, err, out)
				return
			}
			errs <- nil
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatalf("the file is not valid after concurrent writes: %v", err)
	}
	for i := 0; i < goroutines+procs; i++ {
		if f.Devices[fmt.Sprintf("cpu:writer-%d", i)] == nil {
			t.Errorf("device of writer %d lost", i)
		}
		e := f.Devices["cpu:shared"].Kernels[families.GemvNT][fmt.Sprintf("f32/1x%dx8", i+1)]
		if e == nil || e.Params["BN"] != 8*(i+1) {
			t.Errorf("writer %d's entry on the shared device lost or wrong: %+v", i, e)
		}
	}
	if n := len(f.Devices["cpu:shared"].Kernels[families.GemvNT]); n != goroutines+procs {
		t.Errorf("shared device has %d entries, want %d", n, goroutines+procs)
	}
	// The last writer removes the lock file: nothing is left beside the file.
	if _, err := os.Stat(path + LockSuffix); !os.IsNotExist(err) {
		t.Errorf("a lock file is left beside the params file: %v", err)
	}
}
