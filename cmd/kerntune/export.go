package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/internal/t4"
	"github.com/kerntune/kerntune/internal/trace"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdExport(f, nil) })
}

// ExportOptions are what export is asked to do.
type ExportOptions struct {
	IO                  IOStreams
	File                string // the params file: FILE, or the default one
	t4, force           bool
	out, tracePath      string
	device, kernel, key string
}

// NewCmdExport builds the export command; runF, when not nil, runs instead of runExport.
func NewCmdExport(fac *Factory, runF func(*ExportOptions) error) *cobra.Command {
	f := &ExportOptions{IO: fac.IO}
	cmd := &cobra.Command{
		Use:   "export --t4 [FILE] [--trace FILE] [--out FILE]",
		Short: "Write tuning results in another tool's format (--t4: Kernel Tuner's T4 results)",
		Long: `export --t4 writes the T4 results format that Kernel Tuner's tooling reads
(schema_version "1.0.0", times in milliseconds). With --trace every measured
candidate of the trace becomes a result (failed ones with their invalidity:
compile, correctness or runtime); without it each entry of the params file
gives its winner and its default. Every result carries "kerntune_entry"
(device, kernel, key), so select one entry with --device, --kernel and --key
for tools that expect one tuning problem per file. --out ending in .gz is
gzip-compressed; the default is stdout. An existing --out that is not a T4
results file is replaced only with --force.`,
		Args: atMostArgs("the params file"),
		RunE: func(_ *cobra.Command, args []string) error {
			f.File = paramsFileArg(args)
			return runOr(f, runF, runExport)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.t4, "t4", false, "write Kernel Tuner's T4 results format")
	fl.StringVar(&f.out, "out", "", "output file (.gz: gzip); default stdout")
	fl.BoolVar(&f.force, "force", false, "replace an existing --out that is not a T4 results file")
	fl.StringVar(&f.tracePath, "trace", "", "trace file (JSON lines from tune --trace): export every measured candidate")
	fl.StringVar(&f.device, "device", "", "export only this device key")
	fl.StringVar(&f.kernel, "kernel", "", "export only this kernel family")
	fl.StringVar(&f.key, "key", "", "export only this entry key, e.g. f32/tiny")
	return cmd
}

func runExport(f *ExportOptions) error {
	if !f.t4 {
		return usageErrorf("choose the format: --t4 (Kernel Tuner's T4 results) is the one supported")
	}
	if f.out != "" && f.out != "-" {
		if err := checkOutPath(f.out); err != nil {
			return err
		}
		if err := checkOutKind("--out", f.out, "a T4 results file", f.force, t4.Is); err != nil {
			return err
		}
	}
	pf, err := readParamsFile(f.File)
	if err != nil {
		return err
	}
	var recs []trace.Record
	if f.tracePath != "" {
		if recs, err = readTrace(f.tracePath); err != nil {
			return err
		}
	}
	sel := t4.Select{Device: f.device, Kernel: f.kernel, Key: f.key}
	var doc *t4.File
	if recs = trace.Latest(recs); len(recs) > 0 {
		doc = t4.FromTrace(pf, recs, f.tracePath, sel, "kerntune "+version())
	} else {
		doc = t4.FromParams(pf, sel, "kerntune "+version())
	}
	if len(doc.Results) == 0 {
		return usageErrorf("nothing to export: no entry matches --device %q --kernel %q --key %q", f.device, f.kernel, f.key)
	}
	data, err := doc.Encode(strings.HasSuffix(f.out, ".gz"))
	if err != nil {
		return err
	}
	if f.out == "" || f.out == "-" {
		_, err := f.IO.Out.Write(data)
		return err
	}
	return writeOut(f.out, data)
}
