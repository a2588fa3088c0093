package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/compilecache"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/cpu"
	"github.com/kerntune/kerntune/tuner/device"
	"github.com/kerntune/kerntune/tuner/internal/tunertest"
)

// TestMain doubles as the worker: started with KTDEV_WORKER_TEST set, the
// test binary serves the CPU backend, with the faults in KTDEV_FAULT.
func TestMain(m *testing.M) {
	if os.Getenv("KTDEV_WORKER_TEST") == "" {
		os.Exit(m.Run())
	}
	if os.Getenv("KTDEV_UNAVAILABLE") != "" {
		fmt.Fprintln(os.Stderr, "kerntune worker: --backend metal: backend unavailable: Metal is only available on macOS")
		os.Exit(ExitUnavailable)
	}
	b, err := cpu.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	faults, err := ParseFaults(os.Getenv("KTDEV_FAULT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var served device.Backend = WithFaults(b, faults)
	if key := os.Getenv("KTDEV_LOSE"); key != "" {
		served = &losingBackend{Backend: served, key: key}
	}
	if spec := os.Getenv("KTDEV_DIE"); spec != "" {
		key, file, _ := strings.Cut(spec, "@")
		served = &dyingBackend{Backend: served, key: key, stderr: file}
	}
	if keys := os.Getenv("KTDEV_READY"); keys != "" {
		served = &readyBackend{Backend: served, ready: strings.Split(keys, ";")}
	}
	if s := os.Getenv("KTDEV_CACHE"); s != "" {
		c := &cachingBackend{Backend: served}
		fmt.Sscanf(s, "%d/%d/%g", &c.stats.Hits, &c.stats.Misses, &c.build)
		served = c
	}
	if err := Serve(served, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// losingBackend models a device that a candidate leaves unusable (a sticky
// CUDA error): its output call fails with errLost, which DeviceLost flags.
type losingBackend struct {
	device.Backend
	key string
}

var errLost = errors.New("context corrupted")

type losingProg struct{ device.Program }

func (l *losingBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	p, err := l.Backend.Build(k, dt, c)
	if err != nil || c.Key() != l.key {
		return p, err
	}
	return losingProg{p}, nil
}

func (losingProg) Output(device.Instance) ([]float32, error) { return nil, errLost }

func (l *losingBackend) DeviceLost(err error) bool { return err.Error() == errLost.Error() }

// dyingBackend models a process killed by a fatal signal in C code (an
// Objective-C exception's abort, say): the candidate key's program writes
// a recorded stderr and exits with status 2, as Go does on a fatal signal.
type dyingBackend struct {
	device.Backend
	key, stderr string
}

type dyingProg struct {
	device.Program
	stderr string
}

func (d *dyingBackend) Build(k *kernels.Kernel, dt kernels.DType, c search.Candidate) (device.Program, error) {
	p, err := d.Backend.Build(k, dt, c)
	if err != nil || c.Key() != d.key {
		return p, err
	}
	return dyingProg{p, d.stderr}, nil
}

func (d dyingProg) Run(device.Instance, int) ([]float64, error) {
	data, err := os.ReadFile(d.stderr)
	if err != nil {
		panic(err)
	}
	os.Stderr.Write(data)
	os.Exit(2)
	return nil, nil
}

// readyBackend models a compile pool whose compiles of the candidates in
// ready (keys) have ended, for kernel softmax.
type readyBackend struct {
	device.Backend
	ready []string
}

func (r *readyBackend) Ready(k *kernels.Kernel, dt kernels.DType, c search.Candidate) bool {
	return k.Name == "softmax" && dt == kernels.F16 && slices.Contains(r.ready, c.Key())
}

// The client asks the worker's backend which compiles have ended (one call
// per question, none again for a compile it said had ended), and asks
// nothing when no worker runs.
func TestReadyRoundTrip(t *testing.T) {
	done, compiling := search.Candidate{"ROWS": 1, "TG": 64}, search.Candidate{"ROWS": 2, "TG": 64}
	t.Setenv("KTDEV_READY", done.Key()+";"+search.Candidate{"ROWS": 4, "TG": 32}.Key())
	b := openTestWorker(t, "", time.Minute, &strings.Builder{})
	var _ device.Readier = b
	softmax, _ := kernels.Get("softmax")
	rmsnorm, _ := kernels.Get("rmsnorm")
	tests := []struct {
		name string
		k    *kernels.Kernel
		dt   kernels.DType
		c    search.Candidate
		want bool
	}{
		{"compiled", softmax, kernels.F16, done, true},
		{"compiling", softmax, kernels.F16, compiling, false},
		{"another dtype", softmax, kernels.F32, done, false},
		{"another kernel", rmsnorm, kernels.F16, done, false},
	}
	for _, tc := range tests {
		before := b.sentOf(opReady)
		if got := b.Ready(tc.k, tc.dt, tc.c); got != tc.want {
			t.Errorf("%s: Ready %v, want %v", tc.name, got, tc.want)
		}
		if n := b.sentOf(opReady) - before; n != 1 {
			t.Errorf("%s: %d ready requests, want 1", tc.name, n)
		}
	}
	again := b.sentOf(opReady)
	if !b.Ready(softmax, kernels.F16, done) || b.Ready(softmax, kernels.F16, compiling) {
		t.Error("asked again: not the same answers")
	}
	if n := b.sentOf(opReady) - again; n != 1 {
		t.Errorf("asked again about an ended and a running compile: %d ready requests, want 1 (the running one)", n)
	}
	// The CPU backend has no compile pool: nothing is ready in its worker.
	t.Setenv("KTDEV_READY", "")
	plain := openTestWorker(t, "", time.Minute, &strings.Builder{})
	if plain.Ready(softmax, kernels.F16, done) {
		t.Error("ready in a worker whose backend has no compile pool")
	}
	// No worker running: false, and no worker is started for the question.
	b.Close()
	before := b.calls()
	if b.Ready(softmax, kernels.F16, done) {
		t.Error("ready with no worker running")
	}
	if b.calls() != before || b.p != nil {
		t.Errorf("asking with no worker running made %d calls, started a worker: %v", b.calls()-before, b.p != nil)
	}
}

// cachingBackend models a backend with a compile cache whose counters
// read stats, and a compile pool busy for build seconds.
type cachingBackend struct {
	device.Backend
	stats compilecache.Stats
	build float64
}

func (c *cachingBackend) CacheStats() compilecache.Stats { return c.stats }
func (c *cachingBackend) BuildSeconds() float64          { return c.build }

// The worker's compile-cache counters and compile seconds reach the
// parent (an entry's time split counts cache hits and the pool's time
// from them); a backend without a cache, or no worker running, reads zero
// without starting one.
func TestCacheStatsRoundTrip(t *testing.T) {
	t.Setenv("KTDEV_CACHE", "7/3/2.5")
	b := openTestWorker(t, "", time.Minute, &strings.Builder{})
	var _ device.CacheReporter = b
	var _ device.BuildTimer = b
	if got, want := b.CacheStats(), (compilecache.Stats{Hits: 7, Misses: 3}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if got := b.BuildSeconds(); got != 2.5 {
		t.Errorf("build seconds %g, want 2.5", got)
	}
	t.Setenv("KTDEV_CACHE", "")
	plain := openTestWorker(t, "", time.Minute, &strings.Builder{})
	if got := plain.CacheStats(); got != (compilecache.Stats{}) {
		t.Errorf("a backend without a cache: stats %+v", got)
	}
	if got := plain.BuildSeconds(); got != 0 {
		t.Errorf("a backend without a compile pool: build seconds %g", got)
	}
	b.Close()
	before := b.calls()
	if got, s := b.CacheStats(), b.BuildSeconds(); got != (compilecache.Stats{}) || s != 0 || b.calls() != before || b.p != nil {
		t.Errorf("no worker running: stats %+v, build seconds %g, %d calls, worker started %v", got, s, b.calls()-before, b.p != nil)
	}
}

// sentOf is how many requests of operation op b has sent.
func (b *Backend) sentOf(op string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent[op]
}

// A call whose error leaves the device unusable is a crash: the worker
// exits, the next call gets a fresh one with the problem loaded again.
func TestDeviceLostRestartsWorker(t *testing.T) {
	k := tunertest.Kernel(t, "rmsnorm")
	good := tunertest.Defaults(t, k, "cpu")
	bad := search.Candidate{}
	for n, v := range good {
		bad[n] = v
	}
	bad["UNROLL"] = 2
	if bad.Key() == good.Key() {
		bad["UNROLL"] = 4
	}
	t.Setenv("KTDEV_LOSE", bad.Key())
	b := openTestWorker(t, "", time.Minute, &strings.Builder{})
	p, inst := loadSeeded(t, b, k, []int{5, 77}, 9)
	gp := mustBuild(t, b, k, good)
	bp := mustBuild(t, b, k, bad)
	if _, err := bp.Output(inst); !errors.Is(err, device.ErrCrashed) || !strings.Contains(err.Error(), "context corrupted") {
		t.Fatalf("output on a lost device: %v, want ErrCrashed with the reason", err)
	}
	out, err := gp.Output(inst)
	if err != nil {
		t.Fatalf("the next call in a fresh worker: %v", err)
	}
	if err := p.Verify(out); err != nil {
		t.Errorf("output in the fresh worker: %v", err)
	}
	if b.Restarts() != 1 {
		t.Errorf("%d workers lost, want 1", b.Restarts())
	}
}

// loadSeeded makes the f32 problem of k of shape, seeded with seed, and
// loads it into b.
func loadSeeded(t *testing.T, b *Backend, k *kernels.Kernel, shape []int, seed uint64) (*kernels.Problem, device.Instance) {
	t.Helper()
	p, err := kernels.NewSeededProblem(k, kernels.F32, kernels.Case{Shape: shape}, seed)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := b.Load(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p, inst
}

// mustBuild builds candidate c of k for f32 on b.
func mustBuild(t *testing.T, b *Backend, k *kernels.Kernel, c search.Candidate) device.Program {
	t.Helper()
	prog, err := b.Build(k, kernels.F32, c)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// workerAndLocal is the kernel of family, a worker without faults and the
// CPU backend in process, to compare the two.
func workerAndLocal(t *testing.T, family string) (*kernels.Kernel, *Backend, *cpu.Backend) {
	t.Helper()
	k := tunertest.Kernel(t, family)
	b := openTestWorker(t, "", time.Minute, &strings.Builder{})
	local, err := cpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	return k, b, local
}

func openTestWorker(t *testing.T, faults string, timeout time.Duration, log *strings.Builder) *Backend {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(Options{
		Command: []string{exe, "-test.run=^$"},
		Env:     append(os.Environ(), "KTDEV_WORKER_TEST=1", "KTDEV_FAULT="+faults),
		Timeout: timeout,
		Log:     log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// A candidate that crashes the worker and one that hangs are recorded as
// crashed and timeout with their reasons; the run goes on in fresh workers
// and finishes with the other candidates' results.
func TestCrashAndHangAreIsolated(t *testing.T) {
	k := tunertest.Kernel(t, "softmax")
	task := tuner.Task{Kernel: k, DType: kernels.F32, Cases: []kernels.Case{{Shape: []int{16, 300}}}}
	local, err := cpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tuner.New(local, tuner.Config{}).Space(task)
	if err != nil {
		t.Fatal(err)
	}
	def := tunertest.Defaults(t, k, "cpu").Key()
	var picks []string
	for _, c := range sp.Enumerate() {
		if c.Key() != def && len(picks) < 2 {
			picks = append(picks, c.Key())
		}
	}
	crashKey, hangKey := picks[0], picks[1]
	var log strings.Builder
	b := openTestWorker(t, "crash:"+crashKey+";hang:"+hangKey, 2*time.Second, &log)
	if b.Info().Backend != "cpu" || b.Info().Key != local.Info().Key {
		t.Fatalf("worker device %+v, want the local CPU %s", b.Info(), local.Info().Key)
	}
	tu := tuner.New(b, tuner.Config{Strategy: "exhaustive", Samples: 3, FinalSamples: 5, Warmup: time.Millisecond})
	res, err := tu.Run(context.Background(), task, 5*time.Minute)
	if err != nil {
		t.Fatalf("the run did not finish: %v\nworker log:\n%s", err, log.String())
	}
	byKey := map[string]tuner.Measurement{}
	ok := 0
	for _, m := range res.Trace {
		byKey[m.Key] = m
		if m.Status == tuner.StatusOK && m.Samples > 0 {
			ok++
		}
	}
	if m := byKey[crashKey]; m.Status != tuner.StatusCrashed || !strings.Contains(m.Err, "index out of range") {
		t.Errorf("crashing candidate recorded as %q: %s", m.Status, m.Err)
	}
	if m := byKey[hangKey]; m.Status != tuner.StatusTimeout || !strings.Contains(m.Err, "within 2s") {
		t.Errorf("hanging candidate recorded as %q: %s", m.Status, m.Err)
	}
	if want := len(sp.Enumerate()) - 2; ok != want {
		t.Errorf("%d candidates measured, want all %d others", ok, want)
	}
	if res.Entry == nil || res.Entry.MedianUS <= 0 || res.Entry.Candidates.Failed != 2 {
		t.Errorf("entry %+v", res.Entry)
	}
	if b.Restarts() != 2 {
		t.Errorf("%d workers lost, want 2 (one crash, one hang)\n%s", b.Restarts(), log.String())
	}
}

// Outputs and times through the worker equal those of the backend in process.
func TestWorkerMatchesInProcess(t *testing.T) {
	k, b, local := workerAndLocal(t, "gemv_nt")
	c := tunertest.Defaults(t, k, "cpu")
	for _, cs := range k.Odd {
		p, err := kernels.NewSeededProblem(k, kernels.F32, cs, 42)
		if err != nil {
			t.Fatal(err)
		}
		var outs [2][]float32
		for i, be := range []device.Backend{b, local} {
			inst, err := be.Load(p, 2)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := be.Build(k, kernels.F32, c)
			if err != nil {
				t.Fatal(err)
			}
			if outs[i], err = prog.Output(inst); err != nil {
				t.Fatal(err)
			}
			ts, err := prog.Run(inst, 3)
			if err != nil || len(ts) != 3 || ts[0] <= 0 {
				t.Fatalf("run: %v %v", ts, err)
			}
			prog.Close()
			inst.Close()
		}
		if err := p.Verify(outs[0]); err != nil {
			t.Errorf("%s through the worker: %v", cs, err)
		}
		for i := range outs[0] {
			if outs[0][i] != outs[1][i] {
				t.Fatalf("%s: output %d differs: worker %g, in process %g", cs, i, outs[0][i], outs[1][i])
			}
		}
	}
	// The worker's device limits came with its description.
	if got, want := b.Info().Limits, local.Info().Limits; got.Threads != want.Threads || got.Threads == 0 {
		t.Errorf("limits through the worker %+v, in process %+v", got, want)
	}
	for _, con := range b.Info().Limits.Constraints(k, kernels.F32) {
		if err := con.Check(search.Candidate{"THREADS": 1 << 20}); err == nil {
			t.Errorf("constraint %q accepted 2^20 threads", con.Name)
		}
	}
}

// A large output's sample through the worker holds the rows the whole
// output has in process, and finds an unwritten element outside them.
func TestWorkerOutputSample(t *testing.T) {
	k, b, local := workerAndLocal(t, "softmax")
	p, err := kernels.NewSeededProblem(k, kernels.F32, kernels.Case{Shape: []int{2048, 1024}}, 42)
	if err != nil {
		t.Fatal(err)
	}
	s, sampled := p.SampleRows(kernels.Salt("x"))
	if !sampled {
		t.Fatal("a 2048×1024 output is not sampled")
	}
	c := tunertest.Defaults(t, k, "cpu")
	inst, err := b.Load(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	prog := mustBuild(t, b, k, c)
	defer prog.Close()
	so, ok := prog.(device.SampledOutputer)
	if !ok {
		t.Fatal("a worker program does not return samples")
	}
	before := b.sent[opOutput]
	rows, bad, n, err := so.OutputSample(inst, s)
	if err != nil {
		t.Fatal(err)
	}
	if b.sent[opOutput] != before+1 || len(rows) != s.Elems() || n != 2048*1024 || bad != -1 {
		t.Fatalf("sample of %d elements (want %d), output %d, first bad %d", len(rows), s.Elems(), n, bad)
	}
	if err := p.VerifySample(s, rows, bad, n, nil); err != nil {
		t.Errorf("the default's sample: %v", err)
	}
	linst, _ := local.Load(p, 1)
	lprog, _ := local.Build(k, kernels.F32, c)
	whole, err := lprog.Output(linst)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.Extract(whole)
	for i := range want {
		if rows[i] != want[i] {
			t.Fatalf("sampled element %d: worker %g, in process %g", i, rows[i], want[i])
		}
	}
}

// calls is how many requests b has sent to its workers.
func (b *Backend) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.sent {
		n += c
	}
	return n
}

// Listing a space through the worker sends no request: the device's limits
// are data that came with Info (one request per check would be 6 300 for
// the 2 700 candidates of the CPU gemm_av f32 space).
func TestSpaceChecksMakeNoCalls(t *testing.T) {
	b := openTestWorker(t, "", time.Minute, &strings.Builder{})
	local, err := cpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gemm_av", "softmax"} {
		k := tunertest.Kernel(t, name)
		task := tuner.Task{Kernel: k, DType: kernels.F32, Cases: k.Workload[:1]}
		before := b.calls()
		sp, err := tuner.New(b, tuner.Config{}).Space(task)
		if err != nil {
			t.Fatal(err)
		}
		got := sp.Enumerate()
		if n := b.calls() - before; n != 0 {
			t.Errorf("%s: %d requests to list %d candidates, want 0", name, n, len(got))
		}
		lsp, err := tuner.New(local, tuner.Config{}).Space(task)
		if err != nil {
			t.Fatal(err)
		}
		want := lsp.Enumerate()
		if err := testutil.SameKeys(got, want); err != nil || len(got) == 0 {
			t.Fatalf("%s: through the worker, %v; %d in process", name, err, len(want))
		}
	}
}

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec, wantErr string
		n             int
	}{
		{"", "", 0},
		{"crash:BN=8,ROWS=1", "", 1},
		{"crash:BN=8;hang:BN=16", "", 2},
		{"explode:BN=8", "want crash:KEY", 0},
		{"crash", "want crash:KEY", 0},
	}
	for _, tt := range tests {
		f, err := ParseFaults(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(f) != tt.n {
			t.Errorf("%q: %v %v", tt.spec, f, err)
		}
	}
}

// A worker killed by an Objective-C exception's abort: the error, which
// the journal keeps, and the log name the candidate, the exception and its
// reason, and the last Metal call of the crashing goroutine's traceback,
// and keep the crash part of the worker's stderr.
func TestCrashReportNamesCandidateAndCall(t *testing.T) {
	k := tunertest.Kernel(t, "softmax")
	cand := tunertest.Defaults(t, k, "cpu")
	fixture, err := filepath.Abs(filepath.Join("testdata", "objc-abort.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KTDEV_DIE", cand.Key()+"@"+fixture)
	var log strings.Builder
	b := openTestWorker(t, "", time.Minute, &log)
	_, inst := loadSeeded(t, b, k, []int{4, 64}, 1)
	prog := mustBuild(t, b, k, cand)
	_, err = prog.Run(inst, 1)
	if !errors.Is(err, device.ErrCrashed) {
		t.Fatalf("run: %v, want ErrCrashed", err)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	for _, want := range []string{
		"run of softmax f32 " + cand.Key(),
		"exit status 2",
		"*** Terminating app due to uncaught exception 'NSInvalidArgumentException', reason: '-[MTLCompileOptions setMathMode:]: unrecognized selector",
		"last Metal call: metal.(*Backend).compileOptions (backend_darwin.go:312)",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("error's first line lacks %q:\n%s", want, first)
		}
	}
	for _, want := range []string{"First throw call stack", "SIGABRT: abort", "goroutine 21 "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks the stderr's %q:\n%s", want, err)
		}
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks the stderr's %q:\n%s", want, log.String())
		}
	}
}

func TestReadCrash(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	long := strings.Repeat("noise line\n", 2000) + "panic: runtime error: index out of range [9] with length 4\n\ngoroutine 7 [running]:\n" +
		"github.com/kerntune/kerntune/tuner/cpu.(*prog).Run.func1()\n\t/src/tuner/cpu/cpu.go:42 +0x30\n" + strings.Repeat("more\n", 3000)
	tests := []struct {
		name, stderr   string
		reason, call   string
		metal          bool
		excerptHas     []string
		excerptLacks   string
		maxExcerptSize int
	}{
		{"objective-c exception", read("objc-abort.stderr"),
			"*** Terminating app due to uncaught exception 'NSInvalidArgumentException', reason: '-[MTLCompileOptions setMathMode:]: unrecognized selector sent to instance 0x6000030a4000'",
			"metal.(*Backend).compileOptions (backend_darwin.go:312)", true,
			[]string{"*** First throw call stack:", "SIGABRT: abort", "gpuThread"}, "GPU core count unknown", 0},
		{"go abort", read("go-abort.stderr"), "SIGABRT: abort", "", false, []string{"runtime.raise"}, "", 0},
		{"segfault", "SIGSEGV: segmentation violation\nPC=0x0 m=3 sigcode=2\n", "SIGSEGV: segmentation violation", "", false, nil, "", 0},
		{"fatal error", "note\nfatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation]\n", "fatal error: unexpected signal during runtime execution", "", false, nil, "note", 0},
		{"panic in a backend, long stderr", long, "panic: runtime error: index out of range [9] with length 4",
			"cpu.(*prog).Run.func1 (cpu.go:42)", false, []string{"goroutine 7"}, "noise line", stderrExcerpt + 64},
		{"no crash line", "one\ntwo\n", "two", "", false, []string{"one\ntwo"}, "", 0},
		{"empty", "", "", "", false, nil, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := readCrash(tc.stderr)
			if r.reason != tc.reason || r.call != tc.call || r.metal != tc.metal {
				t.Errorf("reason %q, call %q (metal %v);\nwant %q, %q (%v)", r.reason, r.call, r.metal, tc.reason, tc.call, tc.metal)
			}
			for _, s := range tc.excerptHas {
				if !strings.Contains(r.excerpt, s) {
					t.Errorf("excerpt lacks %q", s)
				}
			}
			if tc.excerptLacks != "" && strings.Contains(r.excerpt, tc.excerptLacks) {
				t.Errorf("excerpt has %q, from before the crash", tc.excerptLacks)
			}
			if tc.maxExcerptSize > 0 && len(r.excerpt) > tc.maxExcerptSize {
				t.Errorf("excerpt of %d bytes, want at most %d", len(r.excerpt), tc.maxExcerptSize)
			}
		})
	}
}

// A worker whose backend this machine lacks exits with ExitUnavailable:
// Open's error wraps device.ErrUnavailable, so that "auto" passes over it
// quietly, and the worker is not reported as crashed.
func TestWorkerUnavailable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	_, err = Open(Options{Command: []string{exe, "-test.run=^$"}, Env: append(os.Environ(), "KTDEV_WORKER_TEST=1", "KTDEV_UNAVAILABLE=1"), Log: &log})
	if !errors.Is(err, device.ErrUnavailable) || errors.Is(err, device.ErrCrashed) || !strings.Contains(err.Error(), "only available on macOS") {
		t.Errorf("open: %v; want ErrUnavailable with the worker's reason", err)
	}
	if strings.Contains(log.String(), "crashed") {
		t.Errorf("log reports a crash: %s", log.String())
	}
}
