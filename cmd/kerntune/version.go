package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() {
	commands = append(commands, func(f *Factory) *cobra.Command { return NewCmdVersion(f, nil) })
}

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

// NewCmdVersion builds the version command; runF, when not nil, runs instead of runVersion.
func NewCmdVersion(f *Factory, runF func(*JSONOnlyOptions) error) *cobra.Command {
	return newJSONOnlyCmd(f, "version", "Print kerntune's version: module version, commit, Go version and platform", runF, runVersion)
}

func runVersion(opts *JSONOnlyOptions) error {
	bv := readVersion()
	if opts.JSON {
		return printJSON(opts.IO.Out, bv)
	}
	fmt.Fprintf(opts.IO.Out, "kerntune %s (%s, %s, %s)\n", version(), bv.Module, bv.Go, bv.Platform)
	return nil
}
