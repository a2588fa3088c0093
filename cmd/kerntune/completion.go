package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner/device"
)

// strictCompletionCmd makes cobra's completion command refuse a shell it
// has no script for (completion tcsh) or none at all with a usage error
// (exit 2), instead of printing its help and exiting 0.
func strictCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sh := range c.Commands() {
			shells = append(shells, sh.Name())
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("completion: name a shell: %s", strings.Join(shells, ", "))
			}
			return usageErrorf("completion %s: no completion script for this shell; the shells are %s", args[0], strings.Join(shells, ", "))
		}
	}
}

// registerCompletions teaches shell completion (kerntune completion
// bash|zsh|fish|powershell, which cobra provides) the allowed values of the
// flags that take names, on every command that has them.
func registerCompletions(root *cobra.Command) {
	values := map[string]func() []string{
		"backend":  func() []string { return append([]string{"auto"}, device.Backends()...) },
		"kernel":   kernels.Names,
		"dtype":    dtypeNames,
		"strategy": func() []string { return search.Names },
		"format":   func() []string { return []string{"svg", "png"} },
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, vals := range values {
			if c.Flags().Lookup(name) == nil {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return vals(), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
