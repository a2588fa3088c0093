package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// Every kerntune command line in the README's shell blocks names a command
// and flags that kerntune has; the two set-up commands CI runs (.ci/run)
// are there as it runs them.
func TestREADMECommandsParse(t *testing.T) {
	readme := readREADME(t)
	for _, want := range []string{"\nmake tune ", "\nmake test "} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks the set-up command %q", strings.TrimSpace(want))
		}
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1)
	n := 0
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			line, _, _ = strings.Cut(line, "#")
			args := strings.Fields(line)
			if len(args) == 0 || args[0] != "kerntune" {
				continue
			}
			n++
			root := newRootCmd(systemFactory())
			c, rest, err := root.Find(args[1:])
			if err != nil || c == root {
				t.Errorf("README: %q: no such command (%v)", line, err)
				continue
			}
			if err := c.ParseFlags(rest); err != nil {
				t.Errorf("README: %q: %v", line, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("README: found %d kerntune command lines in its shell blocks, want at least 10", n)
	}
}

// The CLI reference's command list (docs/reference/cli.md, "## Commands")
// names every command kerntune --help lists, as the README's does.
func TestCLIReferenceListsEveryCommand(t *testing.T) {
	page := string(testutil.ReadFile(t, "../../docs/reference/cli.md"))
	start := strings.Index(page, "## Commands")
	if start < 0 {
		t.Fatal("docs/reference/cli.md has no section \"Commands\"")
	}
	list := page[start:]
	if end := strings.Index(list[3:], "\n## "); end >= 0 {
		list = list[:end+3]
	}
	for _, c := range newRootCmd(systemFactory()).Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if !strings.Contains(list, "\nkerntune "+c.Name()+" ") {
			t.Errorf("docs/reference/cli.md's command list lacks kerntune %s", c.Name())
		}
	}
}
