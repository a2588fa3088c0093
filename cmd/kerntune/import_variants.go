package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/spec"
)

func init() {
	commands = append(commands, func(*Factory) *cobra.Command { return newImportVariantsCmd() })
}

func newImportVariantsCmd() *cobra.Command {
	var (
		name, template, body, out string
		onlyListed, force         bool
	)
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
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := params.ReadFileLimit(args[0], params.MaxFileSize)
			var tl *params.TooLargeError
			if errors.As(err, &tl) {
				return usageErrorf("import-variants: %s: %s", args[0], tl.Reason("a variants manifest"))
			}
			if err != nil {
				return usageErrorf("import-variants: %w", err)
			}
			if out != "" {
				if err := checkOutPath(out); err != nil {
					return err
				}
				if err := checkOutKind("--out", out, "a kernel spec", force, func(d []byte) error { _, err := spec.Decode(d, out); return err }); err != nil {
					return err
				}
			}
			vs, err := spec.ParseManifest(data, args[0])
			if err != nil {
				return usageErrorf("import-variants: %w", err)
			}
			if name == "" {
				return usageErrorf("import-variants: --name is required (a lower-case identifier naming the kernel)")
			}
			o := spec.ImportOptions{Name: name, BodyFile: body, OnlyListed: onlyListed}
			if template != "" {
				c, err := spec.Load(template)
				if err != nil {
					return usageErrorf("--into: %w", err)
				}
				o.Template = c.Spec
				if out != "" {
					// Source files are relative to the spec: keep them reachable from --out.
					rebase(&o.Template.Source, filepath.Dir(template), filepath.Dir(out))
				}
			}
			s, notes, err := spec.ImportVariants(vs, args[0], o)
			if err != nil {
				return usageError{err}
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "kerntune: note:", n)
			}
			var buf bytes.Buffer
			je := json.NewEncoder(&buf)
			je.SetEscapeHTML(false) // expressions keep their < and &&
			je.SetIndent("", "  ")
			if err := je.Encode(s); err != nil {
				return err
			}
			enc := buf.Bytes()
			if out == "" {
				_, err = cmd.OutOrStdout().Write(enc)
				return err
			}
			if err := writeOut(out, enc); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s); check it with: kerntune check --spec %s\n", out, plural(len(s.Params), "parameter", "parameters"), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "kernel name of the generated spec (required)")
	f.StringVar(&template, "into", "", "spec whose source, buffers, scalars and launch are kept")
	f.StringVar(&body, "body", "", "body_file of a generated skeleton (default NAME.body)")
	f.StringVar(&out, "out", "", "write the spec here instead of stdout")
	f.BoolVar(&onlyListed, "only-listed", false, "restrict the space to the listed combinations")
	f.BoolVar(&force, "force", false, "replace an existing --out that is not a kernel spec")
	return cmd
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
