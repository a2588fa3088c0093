package main

import (
	"github.com/spf13/cobra"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/search"
	"github.com/kerntune/kerntune/tuner"
)

// registerCompletions teaches shell completion (kerntune completion
// bash|zsh|fish|powershell, which cobra provides) the allowed values of the
// flags that take names, on every command that has them.
func registerCompletions(root *cobra.Command) {
	values := map[string]func() []string{
		"backend":  func() []string { return append([]string{"auto"}, tuner.Backends()...) },
		"kernel":   kernels.Names,
		"dtype":    func() []string { return []string{"f32", "f16"} },
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
