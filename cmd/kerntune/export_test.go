package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
)

// checkT4 checks a decoded document against the constraints of Kernel
// Tuner's T4 results schema (schema/T4/1.0.0/results-schema.json):
// schema_version major.minor.patch, results an array of objects that have
// configuration (object), times (object; its known fields numbers or an
// array for runtimes), invalidity (one of six names), correctness (number),
// and measurements of objects with name (string), value (number, string or
// array) and unit (string).
func checkT4(doc map[string]any) error {
	sv, ok := doc["schema_version"].(string)
	if !ok || !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(sv) {
		return fmt.Errorf("schema_version %v is not major.minor.patch", doc["schema_version"])
	}
	results, ok := doc["results"].([]any)
	if !ok {
		return fmt.Errorf("results is not an array")
	}
	invalid := map[string]bool{"timeout": true, "compile": true, "runtime": true, "correctness": true, "constraints": true, "correct": true}
	for i, r := range results {
		m, ok := r.(map[string]any)
		if !ok {
			return fmt.Errorf("results[%d] is not an object", i)
		}
		for _, req := range []string{"configuration", "times", "invalidity", "correctness"} {
			if _, ok := m[req]; !ok {
				return fmt.Errorf("results[%d] lacks %s", i, req)
			}
		}
		if _, ok := m["configuration"].(map[string]any); !ok {
			return fmt.Errorf("results[%d].configuration is not an object", i)
		}
		times, ok := m["times"].(map[string]any)
		if !ok {
			return fmt.Errorf("results[%d].times is not an object", i)
		}
		for _, k := range []string{"compilation_time", "framework", "search_algorithm", "validation"} {
			if v, ok := times[k]; ok {
				if _, num := v.(float64); !num {
					return fmt.Errorf("results[%d].times.%s is not a number", i, k)
				}
			}
		}
		if v, ok := times["runtimes"]; ok {
			if _, arr := v.([]any); !arr {
				return fmt.Errorf("results[%d].times.runtimes is not an array", i)
			}
		}
		if s, _ := m["invalidity"].(string); !invalid[s] {
			return fmt.Errorf("results[%d].invalidity %v is not one of the six names", i, m["invalidity"])
		}
		if _, ok := m["correctness"].(float64); !ok {
			return fmt.Errorf("results[%d].correctness is not a number", i)
		}
		if ms, ok := m["measurements"]; ok {
			arr, ok := ms.([]any)
			if !ok {
				return fmt.Errorf("results[%d].measurements is not an array", i)
			}
			for j, x := range arr {
				mm, ok := x.(map[string]any)
				if !ok {
					return fmt.Errorf("results[%d].measurements[%d] is not an object", i, j)
				}
				if _, ok := mm["name"].(string); !ok {
					return fmt.Errorf("results[%d].measurements[%d].name is not a string", i, j)
				}
				if _, ok := mm["unit"].(string); !ok {
					return fmt.Errorf("results[%d].measurements[%d].unit is not a string", i, j)
				}
				switch mm["value"].(type) {
				case float64, string, []any:
				default:
					return fmt.Errorf("results[%d].measurements[%d].value is %T", i, j, mm["value"])
				}
			}
		}
	}
	return nil
}

// TestCheckT4AcceptsKernelTuner proves the checker accepts a file Kernel
// Tuner wrote, where the test data is present.
func TestCheckT4AcceptsKernelTuner(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "testdata", "kerneltuner", "convolution_A100_T4.json.gz")
	if p := os.Getenv("KTDEV_T4_EXAMPLE"); p != "" {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("Kernel Tuner T4 example not available (%v); set KTDEV_T4_EXAMPLE", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if err := checkT4(doc); err != nil {
		t.Fatalf("checker rejects Kernel Tuner's own file: %v", err)
	}
	if err := checkT4(map[string]any{"schema_version": "1.0.0", "results": []any{map[string]any{"configuration": map[string]any{}}}}); err == nil {
		t.Fatal("checker accepts a result without times, invalidity, correctness")
	}
}

func TestExportT4(t *testing.T) {
	dir := t.TempDir()
	pf := testutil.WriteFile(t, dir, "p.json", mergeDoc("cpu:m1", "2026-01-01T00:00:00Z", map[string]string{
		"f32/tiny": mergeEntry(64, 40), "f32/mid": mergeEntry(8, 90)}, ""))
	tr := testutil.WriteFile(t, dir, "p.trace.jsonl", `{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":64},"median_us":40,"samples":9}
{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":16},"median_us":55.5,"samples":3}
{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":8},"samples":0,"err":"verification: relative error 1"}
{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"f32/tiny","params":{"BN":4},"samples":0,"err":"build: too many registers"}
{"device":"cpu:m1","kernel":"gemv_nt","dtype":"f32","key":"f32/mid","params":{"BN":8},"median_us":90,"samples":9}
`)
	tests := []struct {
		name        string
		args        []string
		results     int
		invalidity  map[string]int
		firstTimeMS float64
	}{
		{"params file", []string{pf}, 2, map[string]int{"correct": 2}, 0.09},
		{"trace", []string{pf, "--trace", tr}, 5, map[string]int{"correct": 3, "correctness": 1, "compile": 1}, 0.04},
		{"trace, one entry", []string{pf, "--trace", tr, "--kernel", "gemv_nt", "--key", "f32/tiny"}, 4, map[string]int{"correct": 2, "correctness": 1, "compile": 1}, 0.04},
		{"gzip", []string{pf, "--out", filepath.Join(dir, "x.json.gz")}, 2, map[string]int{"correct": 2}, 0.09},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runIn(append([]string{"export", "--t4"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data := []byte(stdout)
			if n := len(tc.args); n >= 2 && tc.args[n-2] == "--out" {
				f, err := os.Open(tc.args[n-1])
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				zr, err := gzip.NewReader(f)
				if err != nil {
					t.Fatalf("--out .gz is not gzip: %v", err)
				}
				var doc any
				if err := json.NewDecoder(zr).Decode(&doc); err != nil {
					t.Fatal(err)
				}
				data, _ = json.Marshal(doc)
			}
			var doc map[string]any
			testutil.DecodeJSON(t, data, &doc)
			if err := checkT4(doc); err != nil {
				t.Fatalf("output breaks the T4 schema: %v", err)
			}
			if u := doc["metadata"].(map[string]any)["timeunit"]; u != "milliseconds" {
				t.Errorf("metadata.timeunit %v", u)
			}
			rs := doc["results"].([]any)
			if len(rs) != tc.results {
				t.Fatalf("%d results, want %d", len(rs), tc.results)
			}
			got := map[string]int{}
			for _, r := range rs {
				got[r.(map[string]any)["invalidity"].(string)]++
			}
			for k, n := range tc.invalidity {
				if got[k] != n {
					t.Errorf("invalidity %s: %d results, want %d (all: %v)", k, got[k], n, got)
				}
			}
			// Results are ordered: the params-file export by key (f32/mid first), the trace in file order.
			first := rs[0].(map[string]any)["measurements"].([]any)[0].(map[string]any)["value"].(float64)
			if first != tc.firstTimeMS {
				t.Errorf("first result time %g ms, want %g (µs converted to ms)", first, tc.firstTimeMS)
			}
		})
	}
	for _, bad := range [][]string{{"export", pf}, {"export", "--t4", pf, "--kernel", "nope"}, {"export", "--t4", filepath.Join(dir, "missing.json")}} {
		if code, _, stderr := runIn(bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, code, exitUsage, stderr)
		}
	}
}
