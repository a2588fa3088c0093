package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/params"
)

func init() { commands = append(commands, newMergeCmd) }

// mergeConflict is an entry that more than one input holds for the same device.
type mergeConflict struct {
	Device   string  `json:"device"`
	Kernel   string  `json:"kernel"`
	Key      string  `json:"key"`
	Kept     string  `json:"kept"`    // file whose entry was kept
	KeptUS   float64 `json:"kept_us"` // its median_us
	Dropped  string  `json:"dropped"`
	DroppedU float64 `json:"dropped_us"`
	Reason   string  `json:"reason"` // chooseEntry's reason
}

// mergeSummary is what merge --json prints.
type mergeSummary struct {
	Out       string          `json:"out"`
	Inputs    []string        `json:"inputs"`
	Devices   int             `json:"devices"`
	Entries   int             `json:"entries"`
	Conflicts []mergeConflict `json:"conflicts"`
}

func newMergeCmd() *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "merge FILE... --out FILE",
		Short: "Combine params files from several machines into one",
		Long: `merge combines hardware_params.json files (for example one per Mac model)
into --out. Every input is checked against the schema first; a file of another
schema version is refused. Devices and entries are united; when two inputs hold
the same entry (device, kernel, key), the one with the smaller median_us is kept
and the conflict is reported. Device facts are united, later inputs winning.
Fields this version does not know are kept. --out may be one of the inputs.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("--out is required: the file to write the merged result to")
			}
			sum, data, err := mergeFiles(args)
			if err != nil {
				return err
			}
			if err := params.WriteFileAtomic(out, data); err != nil {
				return err
			}
			sum.Out = out
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			w := cmd.OutOrStdout()
			for _, c := range sum.Conflicts {
				fmt.Fprintf(w, "conflict %s %s %s: kept %s (%.3f µs), dropped %s (%.3f µs)\n",
					c.Device, c.Kernel, c.Key, c.Kept, c.KeptUS, c.Dropped, c.DroppedU)
			}
			fmt.Fprintf(w, "wrote %s: %d devices, %d entries from %d files (%d conflicts)\n",
				out, sum.Devices, sum.Entries, len(args), len(sum.Conflicts))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the merged result to (required; may be an input)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary (counts and conflicts) as JSON")
	return cmd
}

// mergeFiles reads, checks and merges the inputs in order, returning the
// merged file's bytes (validated by params.Parse).
func mergeFiles(paths []string) (*mergeSummary, []byte, error) {
	sum := &mergeSummary{Inputs: paths, Conflicts: []mergeConflict{}}
	root := map[string]any{"schema_version": json.Number(fmt.Sprint(params.SchemaVersion))}
	devs := map[string]any{}
	// origin[device][kernel][key] is the input an entry currently comes from.
	origin := map[string]string{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, usageErrorf("%s: no such file", path)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if _, err := params.ReadFile(path); err != nil {
			return nil, nil, usageError{err} // names the file and the JSON path, e.g. schema_version
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var in map[string]any
		if err := dec.Decode(&in); err != nil {
			return nil, nil, usageErrorf("%s: %v", path, err)
		}
		if g, ok := in["generator"]; ok {
			root["generator"] = g
		}
		for k, v := range in {
			if _, known := map[string]bool{"schema_version": true, "generator": true, "devices": true}[k]; !known {
				root[k] = v // extra top-level fields: later inputs win
			}
		}
		inDevs, _ := in["devices"].(map[string]any)
		// Entries new to the result come from this input; see keep.
		for dk, dv := range inDevs {
			kern, _ := dv.(map[string]any)["kernels"].(map[string]any)
			for fam, ev := range kern {
				for ek := range ev.(map[string]any) {
					if id := dk + "\x00" + fam + "\x00" + ek; origin[id] == "" {
						origin[id] = path
					}
				}
			}
		}
		params.MergeDevices(devs, inDevs, func(dk, fam, ek string, prev, e any) any {
			if reflect.DeepEqual(prev, e) {
				return prev // the same measurement in two files is no conflict
			}
			id := dk + "\x00" + fam + "\x00" + ek
			pe, perr := entryOf(prev)
			ne, nerr := entryOf(e)
			if perr != nil || nerr != nil {
				return prev // both parsed above, so this does not happen
			}
			// Files from different runs share no timing: the recorded medians decide.
			ch := chooseEntry(pe, ne, evidence{recorded: true})
			c := mergeConflict{Device: dk, Kernel: fam, Key: ek, Reason: ch.reason}
			defer func() { sum.Conflicts = append(sum.Conflicts, c) }()
			if ch.keepNew {
				c.Kept, c.KeptUS, c.Dropped, c.DroppedU = path, ne.MedianUS, origin[id], pe.MedianUS
				origin[id] = path
				return e
			}
			c.Kept, c.KeptUS, c.Dropped, c.DroppedU = origin[id], pe.MedianUS, path, ne.MedianUS
			return prev
		})
	}
	root["devices"] = devs
	data, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	f, err := params.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("merged file would not be valid: %w", err)
	}
	sum.Devices = len(f.Devices)
	for _, d := range f.Devices {
		for _, es := range d.Kernels {
			sum.Entries += len(es)
		}
	}
	sort.SliceStable(sum.Conflicts, func(i, j int) bool {
		a, b := sum.Conflicts[i], sum.Conflicts[j]
		return a.Device+a.Kernel+a.Key < b.Device+b.Kernel+b.Key
	})
	return sum, append(data, '\n'), nil
}
