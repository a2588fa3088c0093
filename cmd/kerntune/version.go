package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newVersionCmd) }

// commit is set by the Makefile (-ldflags -X main.commit=...) for builds
// where Go records no VCS data (-buildvcs=false, git worktrees, tarballs).
var commit string

// buildVersion is what version --json prints.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`            // module version, "(devel)" from a checkout
	Revision string `json:"revision,omitempty"` // VCS commit
	Time     string `json:"time,omitempty"`     // commit time
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readVersion() buildVersion {
	v := buildVersion{Module: "github.com/kerntune/kerntune", Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	v.Revision = commit
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	v.Version = bi.Main.Version
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// version is the module version, with the VCS revision when the binary was built from a checkout.
func version() string {
	bv := readVersion()
	s := bv.Version
	if len(bv.Revision) >= 12 {
		s += " " + bv.Revision[:12]
		if bv.Modified {
			s += "+modified"
		}
	}
	return s
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kerntune's version: module version, commit, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bv := readVersion()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), bv)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kerntune %s (%s, %s, %s)\n", version(), bv.Module, bv.Go, bv.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
