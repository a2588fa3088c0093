package main

import (
	"bytes"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
)

// syncBuffer is a buffer that commands may write from several goroutines
// (the progress display and the command itself).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testFactory is a factory whose commands read nothing and write to out
// and errOut.
func testFactory(out, errOut *syncBuffer) *Factory {
	return &Factory{IO: IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}}
}

// A command built with a runF hands it the options its flags and
// arguments make, and runs nothing else.
func TestCommandsFillTheirOptions(t *testing.T) {
	var out, errOut syncBuffer
	f := testFactory(&out, &errOut)
	var got any
	tuneDefaults := func(o TuneOptions) TuneOptions {
		o.IO, o.dtype, o.strategy, o.budgetS, o.effort, o.seed, o.out = f.IO, "f32", search.DefaultStrategy, "3m", "default", 1, paramfile.DefaultFileName
		o.candTimeout, o.driftEvery, o.driftCooldown = 2*time.Minute, tuner.DefaultDriftEvery, 10*time.Second
		return o
	}
	tests := []struct {
		cmd  *cobra.Command
		args []string
		want any
	}{
		{NewCmdShow(f, func(o *ShowOptions) error { got = *o; return nil }),
			[]string{"x.json", "--json"}, ShowOptions{IO: f.IO, File: "x.json", JSON: true}},
		{NewCmdVersion(f, func(o *JSONOnlyOptions) error { got = *o; return nil }),
			[]string{"--json"}, JSONOnlyOptions{IO: f.IO, JSON: true, fac: f}},
		{NewCmdKernels(f, func(o *JSONOnlyOptions) error { got = *o; return nil }),
			[]string{"--json"}, JSONOnlyOptions{IO: f.IO, JSON: true, fac: f}},
		{NewCmdMerge(f, func(o *MergeOptions) error { got = *o; return nil }),
			[]string{"a.json", "b.json", "--out", "c.json", "--force"},
			MergeOptions{IO: f.IO, Inputs: []string{"a.json", "b.json"}, Out: "c.json", Force: true}},
		{NewCmdExport(f, func(o *ExportOptions) error { got = *o; return nil }),
			[]string{"p.json", "--t4", "--key", "f32/tiny"},
			ExportOptions{IO: f.IO, File: "p.json", t4: true, key: "f32/tiny"}},
		{NewCmdTune(f, func(o *TuneOptions) error { o.ctx = nil; got = *o; return nil }),
			[]string{"--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--isolate", "--allow-tf32"},
			tuneDefaults(TuneOptions{backend: "cpu", kernels: []string{"softmax"}, shapes: []string{"8x300"}, isolate: true, isolateSet: true,
				backendOpts: backendOptionsOf(map[string]string{"allow-tf32": "true"}), fac: f})},
		{NewCmdBench(f, func(o *BenchOptions) error { o.ctx = nil; got = *o; return nil }),
			[]string{"--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--samples", "3", "--params", "p.json", "--json-out", "b.json", "-q"},
			BenchOptions{IO: f.IO, backend: "cpu", dtype: "f32", file: "p.json", kernelNames: []string{"softmax"}, shapes: []string{"8x300"},
				samples: 3, quiet: true, jsonOut: "b.json", fac: f}},
		{NewCmdCheck(f, func(o *CheckOptions) error { o.ctx = nil; got = *o; return nil }),
			[]string{"--spec", "a.json", "--spec", "b.json", "--backend", "none", "--dtype", "f16", "--json"},
			CheckOptions{IO: f.IO, specs: []string{"a.json", "b.json"}, backend: "none", dtypes: []string{"f16"}, asJSON: true, fac: f}},
		{NewCmdDevices(f, func(o *JSONOnlyOptions) error { got = *o; return nil }),
			[]string{"--json"}, JSONOnlyOptions{IO: f.IO, JSON: true, fac: f}},
		{NewCmdGet(f, func(o *GetOptions) error { got = *o; return nil }),
			[]string{"--kernel", "gemv_nt", "--shape", "1x896x896", "--device-name", "Apple M3 Max", "--compute-units", "40", "--spec", "s.json"},
			GetOptions{IO: f.IO, kernel: "gemv_nt", shapeText: "1x896x896", dtype: "f32", deviceName: "Apple M3 Max", computeUnits: 40, specs: []string{"s.json"}}},
		{NewCmdImportVariants(f, func(o *ImportVariantsOptions) error { got = *o; return nil }),
			[]string{"v.json", "--name", "mv", "--into", "t.json", "--out", "s.json", "--only-listed"},
			ImportVariantsOptions{IO: f.IO, File: "v.json", name: "mv", template: "t.json", out: "s.json", onlyListed: true}},
		{NewCmdReplay(f, func(o *ReplayOptions) error { got = *o; return nil }),
			[]string{"--cache", "a.json,b.json", "--budget-evals", "25,100", "--runs", "3", "--no-race"},
			ReplayOptions{IO: f.IO, caches: []string{"a.json", "b.json"}, strategies: []string{search.DefaultStrategy}, budgets: "25,100",
				runs: 3, seed: 1, noRace: true, def: "first", batch: 1}},
		{NewCmdReport(f, func(o *ReportOptions) error { got = *o; return nil }),
			[]string{"p.json", "--format", "png", "--json"},
			ReportOptions{IO: f.IO, File: "p.json", out: "report", format: "png", asJSON: true}},
		{NewCmdVerify(f, func(o *VerifyOptions) error { o.ctx, o.set = nil, nil; got = *o; return nil }),
			[]string{"--kernel", "softmax", "--sample", "7", "--where", "BN=8", "--metal-fast-math"},
			VerifyOptions{IO: f.IO, backend: "auto", kernelNames: []string{"softmax"}, dtypes: []string{"f32", "f16"}, sample: 7, where: []string{"BN=8"},
				backendOpts: backendOptionsOf(map[string]string{"metal-fast-math": "true"}), fac: f}},
		{NewCmdWorker(f, func(o *WorkerOptions) error { got = *o; return nil }),
			[]string{"--backend", "cuda", "--spec", "s.json"},
			WorkerOptions{IO: f.IO, backend: "cuda", specs: []string{"s.json"}, fac: f}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd.Name(), func(t *testing.T) {
			got = nil
			tt.cmd.SetArgs(tt.args)
			if err := tt.cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options %+v, want %+v", got, tt.want)
			}
		})
	}
	if out.String() != "" || errOut.String() != "" {
		t.Errorf("a command with a runF wrote %q, %q", out.String(), errOut.String())
	}
}

// runIn runs the command line in-process with its own streams and returns
// the exit code, stdout and stderr; tests that use it may run in parallel.
func runIn(args ...string) (code int, stdout, stderr string) {
	var out, errOut syncBuffer
	code = runWith(testFactory(&out, &errOut), args)
	return code, out.String(), errOut.String()
}

// cliCase is a command line, the exit code it must give and strings its
// output (stdout and stderr together) must hold.
type cliCase struct {
	args []string
	code int
	want []string
}

// wantExit runs the command line in-process and fails t unless it exits
// with code and its output holds every string of want.
func wantExit(t *testing.T, args []string, code int, want ...string) {
	t.Helper()
	got, log := runCLI(t, args...)
	if got != code {
		t.Errorf("%v: exit %d, want %d; output:\n%s", args, got, code, log)
	}
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("%v: output lacks %q:\n%s", args, w, log)
		}
	}
}

// backendCommands are the commands that open a backend and so take the
// backend options, built on a test factory for tests that look at their flags.
func backendCommands() []*cobra.Command {
	f := testFactory(new(syncBuffer), new(syncBuffer))
	return []*cobra.Command{NewCmdTune(f, nil), NewCmdVerify(f, nil), NewCmdBench(f, nil), NewCmdWorker(f, nil)}
}
