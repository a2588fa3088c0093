package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/tuner/device"
	"github.com/spf13/cobra"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdDevices(f, nil) })
}

type deviceJSON struct {
	Backend      string             `json:"backend"`
	Available    bool               `json:"available"`
	Error        string             `json:"error,omitempty"`
	Key          string             `json:"key,omitempty"`
	Name         string             `json:"name,omitempty"`
	Family       string             `json:"family,omitempty"`
	ComputeUnits int                `json:"compute_units,omitempty"`
	Facts        map[string]float64 `json:"facts,omitempty"`
}

// NewCmdDevices builds the devices command; runF, when not nil, runs instead of runDevices.
func NewCmdDevices(f *Factory, runF func(*JSONOnlyOptions) error) *cobra.Command {
	return newJSONOnlyCmd(f, "devices", "List the devices every backend can use here, with their keys and facts", runF, runDevices)
}

func runDevices(o *JSONOnlyOptions) error {
	var devs []deviceJSON
	for _, name := range device.Backends() {
		d := deviceJSON{Backend: name}
		b, err := o.fac.OpenBackend(backendRequest{Name: name, Bare: true})
		if err != nil {
			d.Error = err.Error()
		} else {
			info := b.Info()
			d.Available, d.Key, d.Name, d.Family, d.ComputeUnits, d.Facts = true, info.Key, info.Name, info.Family, info.ComputeUnits, info.Facts
			b.Close()
		}
		devs = append(devs, d)
	}
	out := o.IO.Out
	if o.JSON {
		return printJSON(out, map[string]any{"devices": devs})
	}
	for _, d := range devs {
		if !d.Available {
			fmt.Fprintf(out, "%-7s unavailable: %s\n", d.Backend, d.Error)
			continue
		}
		fmt.Fprintf(out, "%-7s %s\n        name %s, family %s, %s\n", d.Backend, d.Key, d.Name, d.Family, plural(d.ComputeUnits, "compute unit", "compute units"))
		keys := make([]string, 0, len(d.Facts))
		for k := range d.Facts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+factString(k, d.Facts[k]))
		}
		fmt.Fprintf(out, "        %s\n", strings.Join(parts, ", "))
	}
	return nil
}

// factString prints a fact as a person reads it: plain digits, never an
// exponent (llc_bytes=33554432, not 3.3554432e+07), and a size in bytes
// also in binary units (33554432 (32 MiB)). --json keeps the numbers.
func factString(key string, v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.HasSuffix(key, "_bytes") || v < 1024 || v != math.Trunc(v) {
		return s
	}
	x, unit := v, ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if x < 1024 {
			break
		}
		x, unit = x/1024, u
	}
	return s + " (" + strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) + " " + unit + ")"
}
