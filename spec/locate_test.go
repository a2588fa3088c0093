package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/kernels"
	"github.com/kerntune/kerntune/kernels/gpu"
)

// Locate maps a line of a generated source back to the user's text: the
// line of the spec's JSON for a body written there (an array of lines or
// one string), the line of the body file otherwise; a line kerntune
// generated maps to nothing.
func TestLocate(t *testing.T) {
	orig, err := os.ReadFile("../examples/swiglu.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range doc["source"].(map[string]any)["body"].([]any) {
		lines = append(lines, l.(string))
	}
	body := strings.Join(lines, "\n")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withSource := func(src map[string]any) []byte {
		doc["source"] = src
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	arrayLine := 1 + strings.Count(string(orig[:strings.Index(string(orig), "const int total")]), "\n")
	asString := withSource(map[string]any{"function": "kt_swiglu", "body": body})
	stringLine := 1 + strings.Count(string(asString[:strings.Index(string(asString), `"body"`)]), "\n")
	write("swiglu.body", []byte(body))
	tests := []struct {
		name, spec, field, file string
		fileLine                int
	}{
		{"array of lines", write("array.json", orig), "source.body", "array.json", arrayLine},
		{"one string", write("string.json", asString), "source.body", "string.json", stringLine},
		{"body file", write("file.json", withSource(map[string]any{"function": "kt_swiglu", "body_file": "swiglu.body"})), "source.body_file", "swiglu.body", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp, err := Load(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			src, err := cp.Body.SourceFor(gpu.Metal, kernels.F32, cp.Space().Enumerate()[0])
			if err != nil {
				t.Fatal(err)
			}
			gen := strings.Split(src, "\n")
			n := 1 + slices.IndexFunc(gen, func(l string) bool { return strings.Contains(l, "const int total") })
			o, ok := cp.Locate(src, n)
			want := Origin{Field: tt.field, Line: 2, File: filepath.Join(dir, tt.file), FileLine: tt.fileLine, Text: "  const int total = rows * cols;"}
			if !ok || o != want {
				t.Errorf("Locate(line %d) = %+v, %v; want %+v", n, o, ok, want)
			}
			if o, ok := cp.Locate(src, 1); ok {
				t.Errorf("a generated line located at %+v", o)
			}
		})
	}
}
