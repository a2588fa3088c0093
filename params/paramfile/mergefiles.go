package paramfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
)

// MergeConflict is an entry that more than one input of MergeFiles holds
// for the same device, with different contents.
type MergeConflict struct {
	Device   string  `json:"device"`
	Kernel   string  `json:"kernel"`
	Key      string  `json:"key"`
	Kept     string  `json:"kept"`    // file whose entry was kept
	KeptUS   float64 `json:"kept_us"` // its median_us
	Dropped  string  `json:"dropped"`
	DroppedU float64 `json:"dropped_us"`
	Reason   string  `json:"reason"` // ChooseEntry's reason
}

// MergeSummary is what MergeFiles did (kerntune merge --json prints it).
type MergeSummary struct {
	Out       string          `json:"out"` // set by the caller that writes the result
	Inputs    []string        `json:"inputs"`
	Devices   int             `json:"devices"`
	Entries   int             `json:"entries"`
	Conflicts []MergeConflict `json:"conflicts"`
}

// MergeFiles reads, checks and merges params files in order and returns
// the merged file's bytes (valid for Parse). Devices and entries are
// united; when two inputs hold the same entry (device, kernel, key) with
// different contents, ChooseEntry on the recorded medians picks one and
// the conflict is reported. Device facts are united, later inputs winning,
// as are unknown top-level fields. A missing or invalid input is a
// *PathError naming the file.
func MergeFiles(paths []string) (*MergeSummary, []byte, error) {
	sum := &MergeSummary{Inputs: paths, Conflicts: []MergeConflict{}}
	root := map[string]any{"schema_version": json.Number(fmt.Sprint(SchemaVersion))}
	devs := map[string]any{}
	// origin[device \0 kernel \0 key] is the input an entry currently comes from.
	origin := map[string]string{}
	for _, path := range paths {
		data, err := ReadParams(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, &PathError{File: path, Msg: "no such file"}
		}
		var pe *PathError
		if errors.As(err, &pe) {
			return nil, nil, err // over MaxFileSize
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if _, err := parse(data, path); err != nil {
			return nil, nil, err // names the file and the JSON path, e.g. schema_version
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var in map[string]any
		if err := dec.Decode(&in); err != nil {
			return nil, nil, &PathError{File: path, Msg: err.Error()}
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
		MergeDevices(devs, inDevs, func(dk, fam, ek string, prev, e any) any {
			if reflect.DeepEqual(prev, e) {
				return prev // the same measurement in two files is no conflict
			}
			id := dk + "\x00" + fam + "\x00" + ek
			pe, perr := DecodeEntry(prev)
			ne, nerr := DecodeEntry(e)
			if perr != nil || nerr != nil {
				return prev // both parsed above, so this does not happen
			}
			// Files from different runs share no timing: the recorded medians decide.
			ch := ChooseEntry(pe, ne, Evidence{Recorded: true})
			c := MergeConflict{Device: dk, Kernel: fam, Key: ek, Reason: ch.Reason}
			defer func() { sum.Conflicts = append(sum.Conflicts, c) }()
			if ch.KeepNew {
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
	f, err := Parse(data)
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
