package main

import (
	"bytes"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
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
		o.IO, o.dtype, o.strategy, o.budgetS, o.seed, o.out = f.IO, "f32", search.DefaultStrategy, "3m", 1, params.DefaultFileName
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
		{NewCmdVersion(f, func(o *VersionOptions) error { got = *o; return nil }),
			[]string{"--json"}, VersionOptions{IO: f.IO, JSON: true}},
		{NewCmdKernels(f, func(o *KernelsOptions) error { got = *o; return nil }),
			[]string{"--json"}, KernelsOptions{IO: f.IO, JSON: true}},
		{NewCmdMerge(f, func(o *MergeOptions) error { got = *o; return nil }),
			[]string{"a.json", "b.json", "--out", "c.json", "--force"},
			MergeOptions{IO: f.IO, Inputs: []string{"a.json", "b.json"}, Out: "c.json", Force: true}},
		{NewCmdExport(f, func(o *ExportOptions) error { got = *o; return nil }),
			[]string{"p.json", "--t4", "--key", "f32/tiny"},
			ExportOptions{IO: f.IO, File: "p.json", t4: true, key: "f32/tiny"}},
		{NewCmdTune(f, func(o *TuneOptions) error { o.ctx = nil; got = *o; return nil }),
			[]string{"--backend", "cpu", "--kernel", "softmax", "--shape", "8x300", "--isolate", "--allow-tf32"},
			tuneDefaults(TuneOptions{backend: "cpu", kernels: []string{"softmax"}, shapes: []string{"8x300"}, isolate: true, isolateSet: true,
				backendOpts: backendOptions{allowTF32: true}})},
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

// newTuneCmd is the tune command on a test factory, for tests that look at its flags.
func newTuneCmd() *cobra.Command {
	var out, errOut syncBuffer
	return NewCmdTune(testFactory(&out, &errOut), nil)
}
