package opencl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kerntune/kerntune/internal/cover"
	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
	"github.com/kerntune/kerntune/tuner/device"
)

// Test switches (the KTDEV_ prefix keeps them out of the KERNTUNE_
// parameter overrides):
//
//	KTDEV_REQUIRE_OPENCL=1   a missing OpenCL library or device fails instead of skipping (CI)
//	KTDEV_FULL=1             verify every valid candidate instead of a covering sample (make test-full)
//	KTDEV_OPENCL_ALL=1       the same, for this package alone
//	KTDEV_SHARD=I/N          of the candidates of each family and dtype verify only
//	                         the I-th of every N (0 ≤ I < N): make test-full runs one
//	                         process per core, since PoCL compiles one kernel at a time
//	                         per process
//	KTDEV_OPENCL_SEED=N      seed of the covering sample (default 1)
//	KTDEV_SUMMARY=F   append the summary line to file F (CI prints it)

// openOrSkip opens the OpenCL backend, skipping when the machine has no
// OpenCL unless KTDEV_REQUIRE_OPENCL is set.
func openOrSkip(t *testing.T) *Backend {
	t.Helper()
	b, err := Open()
	if errors.Is(err, device.ErrUnavailable) {
		testutil.SkipUnlessRequired(t, "KTDEV_REQUIRE_OPENCL", "%v (apt-get install pocl-opencl-icd ocl-icd-libopencl1)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seed(t *testing.T) uint64 {
	s := os.Getenv("KTDEV_OPENCL_SEED")
	if s == "" {
		return 1
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("KTDEV_OPENCL_SEED=%q: want a non-negative integer", s)
	}
	return v
}

// TestVerifyEveryFamily executes every family's body on the OpenCL device
// (PoCL's CPU device in CI) for f32, f16 and bf16: a seeded covering sample of
// the valid candidates, in which every value of every tuning parameter
// occurs, verified against the float64 reference on the family's odd
// shapes with the output NaN-poisoned first, plus the family's default;
// every valid candidate with KTDEV_FULL or KTDEV_OPENCL_ALL. Each family
// and dtype is a subtest (-run 'TestVerifyEveryFamily/gemv_nt/f16').
func TestVerifyEveryFamily(t *testing.T) {
	b := openOrSkip(t)
	defer b.Close()
	tu := tuner.New(b, tuner.Config{})
	all := cover.Full() || os.Getenv("KTDEV_OPENCL_ALL") != ""
	sd := seed(t)
	shard, shards := shardOf(t)
	start := time.Now()
	total, passed, valid := 0, 0, 0
	for _, k := range kernels.All() {
		for _, dt := range kernels.DTypes {
			t.Run(k.Name+"/"+string(dt), func(t *testing.T) {
				sp, err := tu.Space(tuner.Task{Kernel: k, DType: dt})
				if err != nil {
					t.Fatal(err)
				}
				cands := sp.Enumerate()
				sample := cands
				if !all {
					cov := cover.Sample(sp.Params, cands, sd, cover.Values)
					if len(cov.Uncoverable) > 0 {
						t.Logf("%s %s: no valid candidate on %s takes %s", k.Name, dt, b.Info().Name, strings.Join(cov.Uncoverable, ", "))
					}
					if m := cover.Missing(sp.Params, cands, cov.Sample, cover.Values); len(m) > 0 {
						t.Fatalf("the covering sample misses %s", strings.Join(m, ", "))
					}
					sample = withDefault(cov.Sample, k, sp)
				}
				var mine []search.Candidate
				for i, c := range sample {
					if i%shards == shard {
						mine = append(mine, c)
					}
				}
				// In chunks: VerifyCandidates queues all it is given on the
				// compile pool, which would hold thousands of programs.
				rep := &tuner.VerifyReport{Failed: map[string]int{}, Example: map[string]string{}}
				for len(mine) > 0 {
					part := mine[:min(len(mine), 64)]
					mine = mine[len(part):]
					r, err := tu.VerifyCandidates(context.Background(), k, dt, part)
					if err != nil {
						t.Fatal(err)
					}
					rep.Checked += r.Checked
					rep.Passed += r.Passed
					rep.Elapsed += r.Elapsed
					for reason, n := range r.Failed {
						rep.Failed[reason] += n
						if _, ok := rep.Example[reason]; !ok {
							rep.Example[reason] = r.Example[reason]
						}
					}
				}
				total += rep.Checked
				passed += rep.Passed
				valid += len(cands)
				t.Logf("%-10s %s  %d/%d candidates passed (of %d valid) in %.1fs", k.Name, dt, rep.Passed, rep.Checked, len(cands), rep.Elapsed.Seconds())
				for _, r := range rep.Reasons() {
					t.Errorf("%s %s: %d candidates failed: %s (e.g. %s)", k.Name, dt, rep.Failed[r], r, rep.Example[r])
				}
			})
		}
	}
	what := fmt.Sprintf("a covering sample (seed %d; every value of every parameter, make test)", sd)
	if all {
		what = "every candidate (the full sweep, make test-full)"
	}
	if shards > 1 {
		what += fmt.Sprintf(", shard %d/%d", shard, shards)
	}
	line := fmt.Sprintf("OpenCL verification on %s: %d/%d candidates passed, %s of %d valid, every family, f32, f16 and bf16, in %.0fs",
		b.Info().Key, passed, total, what, valid, time.Since(start).Seconds())
	t.Log(line)
	if f := os.Getenv("KTDEV_SUMMARY"); f != "" {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatalf("KTDEV_SUMMARY=%s: %v", f, err)
		}
		fmt.Fprintln(fh, line)
		fh.Close()
	}
	if total == 0 {
		t.Fatal("no candidate was verified")
	}
}

// shardOf parses KTDEV_SHARD=I/N; 0/1 (everything) when unset.
func shardOf(t *testing.T) (shard, shards int) {
	s := os.Getenv("KTDEV_SHARD")
	if s == "" {
		return 0, 1
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		t.Fatalf("KTDEV_SHARD=%q: want I/N with 0 ≤ I < N, e.g. 0/2", s)
	}
	return i, n
}

// withDefault adds the family's default candidate (what an application
// runs untuned) to the sample when it is valid here and not already in it.
func withDefault(sample []search.Candidate, k *kernels.Kernel, sp *search.Space) []search.Candidate {
	ps, ok := k.Space("opencl")
	if !ok {
		return sample
	}
	def := search.Candidate(ps.Defaults())
	for _, c := range sample {
		if c.Key() == def.Key() {
			return sample
		}
	}
	for _, con := range sp.Constraints {
		if con.Check(def) != nil {
			return sample
		}
	}
	return append(sample, def)
}

// The verification has teeth: a body whose last loop stops one column
// short (an off-by-one in the tail) fails on the device.
func TestVerifyCatchesBrokenBody(t *testing.T) {
	b := openOrSkip(t)
	defer b.Close()
	good, err := gpu.Get("softmax")
	if err != nil {
		t.Fatal(err)
	}
	broken := *good
	const loop = "for (int c = sl * VEC; c < cols; c += step) {\n        float t[VEC];\n        LOADV(x, base + c, t);\n        UNROLL_LOOP\n        for (int j = 0; j < VEC; ++j) t[j] = EXP"
	if !strings.Contains(good.Source, loop) {
		t.Fatal("softmax body changed: update the broken variant of this test")
	}
	broken.Source = strings.Replace(good.Source, loop, strings.Replace(loop, "c < cols", "c + step < cols", 1), 1)
	b.compiles.Body = func(family string) (*gpu.Body, error) {
		if family == "softmax" {
			return &broken, nil
		}
		return gpu.Get(family)
	}
	k, _ := kernels.Get("softmax")
	tu := tuner.New(b, tuner.Config{})
	ps, _ := k.Space("opencl")
	rep, err := tu.VerifyCandidates(context.Background(), k, kernels.F32, []search.Candidate{ps.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 1 || rep.Passed != 0 {
		t.Fatalf("broken softmax body: %d of %d passed, want 0 of 1", rep.Passed, rep.Checked)
	}
	for r := range rep.Failed {
		t.Logf("broken body rejected as expected: %s", r)
	}
}
