package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params/paramfile"
	"github.com/kerntune/kerntune/spec"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdImportVariants(f, nil) })
}

// ImportVariantsOptions are what import-variants is asked to do: its flags and its streams.
type ImportVariantsOptions struct {
	IO                        IOStreams
	File                      string // FILE, the variants manifest
	name, template, body, out string
	onlyListed, force         bool
}

// NewCmdImportVariants builds the import-variants command; runF, when not nil, runs instead of runImportVariants.
func NewCmdImportVariants(f *Factory, runF func(*ImportVariantsOptions) error) *cobra.Command {
	opts := &ImportVariantsOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "import-variants FILE --name NAME [--into SPEC] [--only-listed] [--out FILE]",
		Short: "Turn a variants manifest (named variants with bnXX/bkYY/tgZZ tokens and supports flags) into a kernel spec",
		Long: `import-variants reads a manifest in the style of variants_enhanced.json: an
array of variants (or an object with "variants"), each {name, enabled,
supports}. Geometry tokens in the names (bn64, bk128, tg128, unroll8: a prefix
and digits forming a whole "_"-separated part, so "tgread" is not "tg") become
parameters with the values the enabled variants use; several styles (the name
without its tokens) become a STYLE parameter the body branches on; supports.bias,
when true on every enabled variant, becomes "bias": true. Disabled variants are
left out and other supports flags are reported.

With --into SPEC the source, buffers, scalars and launch of an existing spec are
kept and its parameters replaced; otherwise a gemv_nt spec is generated whose
body_file you write. The space is the cartesian product of the values, or with
--only-listed just the listed combinations. The spec is written to --out or
printed (an existing --out that is not a spec is replaced only with --force);
check it with kerntune check --spec.`,
		Args: oneArg("the variants manifest"),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.File = args[0]
			return runOr(opts, runF, runImportVariants)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.name, "name", "", "kernel name of the generated spec (required)")
	fl.StringVar(&opts.template, "into", "", "spec whose source, buffers, scalars and launch are kept")
	fl.StringVar(&opts.body, "body", "", "body_file of a generated skeleton (default NAME.body)")
	fl.StringVar(&opts.out, "out", "", "write the spec here instead of stdout")
	fl.BoolVar(&opts.onlyListed, "only-listed", false, "restrict the space to the listed combinations")
	fl.BoolVar(&opts.force, "force", false, "replace an existing --out that is not a kernel spec")
	return cmd
}

func runImportVariants(opts *ImportVariantsOptions) error {
	data, err := paramfile.ReadFileLimit(opts.File, paramfile.MaxFileSize)
	var tl *paramfile.TooLargeError
	if errors.As(err, &tl) {
		return usageErrorf("import-variants: %s: %s", opts.File, tl.Reason("a variants manifest"))
	}
	if err != nil {
		return usageErrorf("import-variants: %w", err)
	}
	if opts.out != "" {
		if err := checkOutPath(opts.out); err != nil {
			return err
		}
		if err := checkOutKind("--out", opts.out, "a kernel spec", opts.force, func(d []byte) error { _, err := spec.Decode(d, opts.out); return err }); err != nil {
			return err
		}
	}
	vs, err := spec.ParseManifest(data, opts.File)
	if err != nil {
		return usageErrorf("import-variants: %w", err)
	}
	if opts.name == "" {
		return usageErrorf("import-variants: --name is required (a lower-case identifier naming the kernel)")
	}
	o := spec.ImportOptions{Name: opts.name, BodyFile: opts.body, OnlyListed: opts.onlyListed}
	if opts.template != "" {
		c, err := spec.Load(opts.template)
		if err != nil {
			return usageErrorf("--into: %w", err)
		}
		o.Template = c.Spec
		if opts.out != "" {
			// Source files are relative to the spec: keep them reachable from --out.
			rebase(&o.Template.Source, filepath.Dir(opts.template), filepath.Dir(opts.out))
		}
	}
	s, notes, err := spec.ImportVariants(vs, opts.File, o)
	if err != nil {
		return usageError{err}
	}
	for _, n := range notes {
		fmt.Fprintln(opts.IO.ErrOut, "kerntune: note:", n)
	}
	var buf bytes.Buffer
	je := json.NewEncoder(&buf)
	je.SetEscapeHTML(false) // expressions keep their < and &&
	je.SetIndent("", "  ")
	if err := je.Encode(s); err != nil {
		return err
	}
	enc := buf.Bytes()
	if opts.out == "" {
		_, err = opts.IO.Out.Write(enc)
		return err
	}
	if err := writeOut(opts.out, enc); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "wrote %s (%s); check it with: kerntune check --spec %s\n", opts.out, plural(len(s.Params), "parameter", "parameters"), opts.out)
	return nil
}

// rebase rewrites relative source file names from one directory to another.
func rebase(s *spec.Source, from, to string) {
	for _, p := range []*string{&s.BodyFile, &s.CUDAFile, &s.MetalFile, &s.OpenCLFile} {
		if *p == "" || filepath.IsAbs(*p) {
			continue
		}
		src, err1 := filepath.Abs(filepath.Join(from, *p))
		dir, err2 := filepath.Abs(to)
		if err1 != nil || err2 != nil {
			continue
		}
		if rel, err := filepath.Rel(dir, src); err == nil {
			*p = filepath.ToSlash(rel)
		} else {
			*p = src
		}
	}
}
