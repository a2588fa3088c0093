package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params/paramfile"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdMerge(f, nil) })
}

// MergeOptions are what merge is asked to do.
type MergeOptions struct {
	IO     IOStreams
	Inputs []string // FILE...
	Out    string   // --out
	JSON   bool     // --json
	Force  bool     // --force
}

// NewCmdMerge builds the merge command; runF, when not nil, runs instead of runMerge.
func NewCmdMerge(f *Factory, runF func(*MergeOptions) error) *cobra.Command {
	opts := &MergeOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "merge FILE... --out FILE",
		Short: "Combine params files from several machines into one",
		Long: `merge combines hardware_params.json files (for example one per Mac model)
into --out. Every input is checked against the schema first; a file of another
schema version is refused. Devices and entries are united; when two inputs hold
the same entry (device, kernel, key), the one with the smaller median_us is kept
and the conflict is reported. Device facts are united, later inputs winning.
Fields this version does not know are kept. --out may be one of the inputs;
an existing --out that is not a params file is replaced only with --force.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("merge needs at least one params file to merge (kerntune merge A.json [B.json ...] --out OUT.json)")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Inputs = args
			return runOr(opts, runF, runMerge)
		},
	}
	cmd.Flags().StringVar(&opts.Out, "out", "", "file to write the merged result to (required; may be an input)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the summary (counts and conflicts) as JSON")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace an existing --out that is not a params file")
	return cmd
}

func runMerge(opts *MergeOptions) error {
	if opts.Out == "" {
		return usageErrorf("--out is required: the file to write the merged result to")
	}
	if err := checkOutPath(opts.Out); err != nil {
		return err
	}
	if err := checkOutKind("--out", opts.Out, "a params file", opts.Force, func(d []byte) error { _, err := paramfile.Parse(d); return err }); err != nil {
		return err
	}
	sum, data, err := paramfile.MergeFiles(opts.Inputs)
	var pe *paramfile.PathError
	if errors.As(err, &pe) && slices.Contains(opts.Inputs, pe.File) {
		return usageError{err} // a missing or invalid input, named with the JSON path
	}
	if err != nil {
		return err
	}
	if err := writeOut(opts.Out, data); err != nil {
		return err
	}
	sum.Out = opts.Out
	if opts.JSON {
		return printJSON(opts.IO.Out, sum)
	}
	w := opts.IO.Out
	for _, c := range sum.Conflicts {
		fmt.Fprintf(w, "conflict %s %s %s: kept %s (%.3f µs), dropped %s (%.3f µs)\n",
			c.Device, c.Kernel, c.Key, c.Kept, c.KeptUS, c.Dropped, c.DroppedU)
	}
	fmt.Fprintf(w, "wrote %s: %s, %s from %s (%s)\n", opts.Out, plural(sum.Devices, "device", "devices"), plural(sum.Entries, "entry", "entries"),
		plural(len(opts.Inputs), "file", "files"), plural(len(sum.Conflicts), "conflict", "conflicts"))
	return nil
}
