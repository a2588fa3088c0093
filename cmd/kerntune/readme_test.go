package main

import (
	"os"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/params"
)

// The README's default-workload table lists every built-in family's
// workload as kerntune kernels prints it, case for case.
func TestREADMEListsEveryWorkload(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "| family | default workload |\n")
	if !ok {
		t.Fatal("README has no default-workload table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	for _, name := range params.BuiltinNames() {
		k, err := kernels.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		prefix := "| `" + k.Name + "` | "
		var row string
		for _, line := range strings.Split(table, "\n") {
			if strings.HasPrefix(line, prefix) {
				row = strings.TrimSuffix(strings.TrimPrefix(line, prefix), " |")
			}
		}
		if row == "" {
			t.Errorf("README: no default-workload row for %s", k.Name)
			continue
		}
		var want []string
		for _, c := range k.Workload {
			want = append(want, c.String())
		}
		if row != strings.Join(want, ", ") {
			t.Errorf("README's default workload of %s:\n  %s\nkerntune kernels:\n  %s", k.Name, row, strings.Join(want, ", "))
		}
	}
}
