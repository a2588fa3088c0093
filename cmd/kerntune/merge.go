package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
)

func init() { commands = append(commands, newMergeCmd) }

func newMergeCmd() *cobra.Command {
	var out string
	var asJSON, force bool
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
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("--out is required: the file to write the merged result to")
			}
			if err := checkOutPath(out); err != nil {
				return err
			}
			if err := checkOutKind("--out", out, "a params file", force, func(d []byte) error { _, err := params.Parse(d); return err }); err != nil {
				return err
			}
			sum, data, err := params.MergeFiles(args)
			var pe *params.PathError
			if errors.As(err, &pe) && slices.Contains(args, pe.File) {
				return usageError{err} // a missing or invalid input, named with the JSON path
			}
			if err != nil {
				return err
			}
			if err := writeOut(out, data); err != nil {
				return err
			}
			sum.Out = out
			if asJSON {
				return printJSON(cmd.OutOrStdout(), sum)
			}
			w := cmd.OutOrStdout()
			for _, c := range sum.Conflicts {
				fmt.Fprintf(w, "conflict %s %s %s: kept %s (%.3f µs), dropped %s (%.3f µs)\n",
					c.Device, c.Kernel, c.Key, c.Kept, c.KeptUS, c.Dropped, c.DroppedU)
			}
			fmt.Fprintf(w, "wrote %s: %s, %s from %s (%s)\n", out, plural(sum.Devices, "device", "devices"), plural(sum.Entries, "entry", "entries"),
				plural(len(args), "file", "files"), plural(len(sum.Conflicts), "conflict", "conflicts"))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the merged result to (required; may be an input)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary (counts and conflicts) as JSON")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing --out that is not a params file")
	return cmd
}
