package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdKernels(f, nil) })
}

type paramJSON struct {
	Name    string `json:"name"`
	Values  []int  `json:"values"`
	Default int    `json:"default"`
	Doc     string `json:"doc,omitempty"`
}

type classJSON struct {
	Name string `json:"name"`
	Rule string `json:"rule"`
}

type kernelJSON struct {
	Name     string                 `json:"name"`
	Doc      string                 `json:"doc"`
	Dims     []string               `json:"dims"`
	Classes  []classJSON            `json:"classes"`
	Params   map[string][]paramJSON `json:"params"` // by backend kind: cpu, gpu
	Workload []string               `json:"workload"`
}

func describeKernel(k *kernels.Kernel) kernelJSON {
	kj := kernelJSON{Name: k.Name, Doc: k.Doc, Dims: k.Dims, Params: map[string][]paramJSON{}}
	for _, c := range k.Classes {
		kj.Classes = append(kj.Classes, classJSON(c))
	}
	for kind, sp := range k.Spaces {
		for _, p := range sp.Params {
			kj.Params[kind] = append(kj.Params[kind], paramJSON{p.Name, p.Values, p.Default, p.Doc})
		}
	}
	for _, c := range k.Workload {
		kj.Workload = append(kj.Workload, c.String())
	}
	return kj
}

// NewCmdKernels builds the kernels command; runF, when not nil, runs instead of runKernels.
func NewCmdKernels(f *Factory, runF func(*JSONOnlyOptions) error) *cobra.Command {
	return newJSONOnlyCmd(f, "kernels", "List the kernel families, their parameters with allowed values, and shape classes", runF, runKernels)
}

func runKernels(opts *JSONOnlyOptions) error {
	var all []kernelJSON
	for _, k := range kernels.All() {
		all = append(all, describeKernel(k))
	}
	out := opts.IO.Out
	if opts.JSON {
		return printJSON(out, map[string]any{"kernels": all})
	}
	for _, k := range all {
		fmt.Fprintf(out, "%s — %s\n  shape: %s\n  classes:\n", k.Name, k.Doc, strings.Join(k.Dims, "x"))
		for _, c := range k.Classes {
			fmt.Fprintf(out, "    %-14s %s\n", c.Name, c.Rule)
		}
		kinds := make([]string, 0, len(k.Params))
		for kind := range k.Params {
			kinds = append(kinds, kind)
		}
		sort.Strings(kinds)
		for _, kind := range kinds {
			fmt.Fprintf(out, "  parameters (%s backends):\n", kind)
			for _, p := range k.Params[kind] {
				vals := make([]string, len(p.Values))
				for i, v := range p.Values {
					vals[i] = fmt.Sprint(v)
				}
				fmt.Fprintf(out, "    %-8s {%s} default %d  %s   env %s\n", p.Name, strings.Join(vals, ","), p.Default, p.Doc,
					"KERNTUNE_"+strings.ToUpper(k.Name)+"_"+p.Name)
			}
		}
		fmt.Fprintf(out, "  default workload: %s\n\n", strings.Join(k.Workload, ", "))
	}
	return nil
}
