package params_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params"
	"github.com/kerntune/kerntune/params/families"
	"github.com/kerntune/kerntune/spec"
)

// The conformance suite, params/testdata/conformance/*.json, is run by this
// test and by the Python loader's (python/tests/test_conformance.py): both
// loaders must give every case's expected values, sources, device choice,
// warnings and errors. The format is described in
// testdata/conformance/README.md.

type confSuite struct {
	Doc   string                     `json:"doc"`
	Files map[string]json.RawMessage `json:"files"`
	Cases []confCase                 `json:"cases"`
}

type confCase struct {
	Name          string              `json:"name"`
	File          json.RawMessage     `json:"file"`
	FileText      *string             `json:"file_text"`
	FileSize      int64               `json:"file_size"`
	ParamsFromEnv bool                `json:"params_from_env"`
	Options       confOptions         `json:"options"`
	Specs         []string            `json:"specs"`
	Env           map[string]string   `json:"env"`
	LoadError     *confError          `json:"load_error"`
	Device        map[string]any      `json:"device"`
	Warnings      *[][]string         `json:"warnings"`
	UnusedEnv     *[]string           `json:"unused_env"`
	UnusedEnvWhy  map[string][]string `json:"unused_env_why"`
	Queries       []confQuery         `json:"queries"`
}

type confOptions struct {
	Device       string                    `json:"device"`
	DeviceName   string                    `json:"device_name"`
	ComputeUnits int                       `json:"compute_units"`
	Backend      string                    `json:"backend"`
	DeviceFamily string                    `json:"device_family"`
	EnvPrefix    string                    `json:"env_prefix"`
	Defaults     map[string]map[string]int `json:"defaults"`
	Aliases      []struct {
		Name   string   `json:"name"`
		Params []string `json:"params"`
		Sep    string   `json:"sep"`
		Family string   `json:"family"`
	} `json:"aliases"`
	Local    *params.DeviceID `json:"local"`
	LocalGPU *params.DeviceID `json:"local_gpu"`
	// Required: the file must exist (Go's Load, Python's load(required=True)).
	Required bool `json:"required"`
}

type confQuery struct {
	Kernel      string            `json:"kernel"`
	DType       string            `json:"dtype"`
	Shape       json.RawMessage   `json:"shape"`
	Params      map[string][2]any `json:"params"`
	Class       *string           `json:"class"`
	Device      *string           `json:"device"`
	Backend     *string           `json:"backend"`
	Matched     *string           `json:"matched"`
	UseBaseline *bool             `json:"use_baseline"`
	Baseline    *string           `json:"baseline"`
	UseSource   *string           `json:"use_source"`
	Error       *confError        `json:"error"`
}

type confError struct {
	Kind     string   `json:"kind"`
	Path     *string  `json:"path"`
	Contains []string `json:"contains"`
	Vars     []string `json:"vars"`
}

const conformanceDir = "testdata/conformance"

func loadSuites(t *testing.T) map[string]*confSuite {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(conformanceDir, "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no conformance files in %s (%v)", conformanceDir, err)
	}
	out := map[string]*confSuite{}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var s confSuite
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[filepath.Base(name)] = &s
	}
	return out
}

func TestConformance(t *testing.T) {
	suites := loadSuites(t)
	n := 0
	for file, s := range suites {
		for _, c := range s.Cases {
			n++
			t.Run(strings.TrimSuffix(file, ".json")+"/"+c.Name, func(t *testing.T) { runCase(t, s, c) })
		}
	}
	if n < 40 {
		t.Errorf("%d conformance cases; the suite must hold at least 40", n)
	}
}

func runCase(t *testing.T, s *confSuite, c confCase) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hardware_params.json")
	switch {
	case c.FileText != nil:
		testutil.WriteFile(t, dir, "hardware_params.json", *c.FileText)
	case len(c.File) > 0 && c.File[0] == '"':
		var name string
		if err := json.Unmarshal(c.File, &name); err != nil {
			t.Fatal(err)
		}
		data, ok := s.Files[name]
		if !ok {
			t.Fatalf("file %q is not in the suite's files", name)
		}
		testutil.WriteFile(t, dir, "hardware_params.json", string(data))
	case len(c.File) > 0 && string(c.File) != "null":
		testutil.WriteFile(t, dir, "hardware_params.json", string(c.File))
	default:
		path = filepath.Join(dir, "absent.json")
	}
	if c.FileSize > 0 {
		// Zeros up to the size, without writing them (a sparse file).
		if err := os.Truncate(path, c.FileSize); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{}
	for k, v := range c.Env {
		env[k] = v
	}
	o := c.Options
	opts := params.Options{
		Device: o.Device, DeviceName: o.DeviceName, ComputeUnits: o.ComputeUnits, Backend: o.Backend,
		DeviceFamily: o.DeviceFamily, EnvPrefix: o.EnvPrefix, Defaults: o.Defaults, Local: o.Local, LocalGPU: o.LocalGPU,
		Lookup: func(name string) (string, bool) { v, ok := env[name]; return v, ok },
	}
	if opts.Local == nil {
		opts.Local = &params.DeviceID{} // the machine's own CPU must not affect a case
	}
	if opts.LocalGPU == nil {
		opts.LocalGPU = &params.DeviceID{} // nor its GPU
	}
	for _, a := range o.Aliases {
		opts.Aliases = append(opts.Aliases, params.Alias{Name: a.Name, Params: a.Params, Sep: a.Sep, Family: a.Family})
	}
	if c.ParamsFromEnv {
		prefix := o.EnvPrefix
		if prefix == "" {
			prefix = params.DefaultEnvPrefix
		}
		env[prefix+"_PARAMS"] = path
	} else {
		opts.Path = path
	}
	for _, sp := range c.Specs {
		cs, err := spec.Load(filepath.Join(conformanceDir, sp))
		if err != nil {
			checkError(t, "load", "spec", err, c.LoadError)
			return
		}
		if opts.Families == nil {
			opts.Families = map[string]*families.Family{}
		}
		opts.Families[cs.Kernel.Name] = cs.Kernel.Family
	}
	var l *params.Loader
	var err error
	if o.Required {
		l, err = params.Load(path, opts)
	} else {
		l, err = params.Open(opts)
	}
	if err != nil {
		kind := "options"
		var pe *params.PathError
		switch {
		case errors.As(err, &pe):
			kind = "path"
		case errors.Is(err, fs.ErrNotExist):
			kind = "io"
		}
		checkError(t, "load", kind, err, c.LoadError)
		return
	}
	if c.LoadError != nil {
		t.Fatalf("loading succeeded; want a %s error", c.LoadError.Kind)
	}
	if c.Device != nil {
		d := l.Device()
		fb := d.Fallbacks
		if fb == nil {
			fb = []string{}
		}
		got := map[string]any{"key": d.Key, "how": d.How, "matched": d.Matched, "in_file": d.InFile, "backend": d.Backend,
			"kind": d.Kind, "family": d.Family, "fallbacks": fb}
		for k, want := range c.Device {
			g, ok := got[k]
			if !ok {
				t.Errorf("device: unknown field %q in the case", k)
				continue
			}
			if !sameJSON(g, want) {
				t.Errorf("device.%s = %v, want %v", k, g, want)
			}
		}
	}
	w := l.Warnings()
	var wantW [][]string
	if c.Warnings != nil {
		wantW = *c.Warnings
	}
	if len(w) != len(wantW) {
		t.Errorf("warnings %q; want %d", w, len(wantW))
	} else {
		for i, subs := range wantW {
			for _, sub := range subs {
				if !strings.Contains(w[i], sub) {
					t.Errorf("warning %d %q lacks %q", i, w[i], sub)
				}
			}
		}
	}
	if c.UnusedEnv != nil {
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		got := l.UnusedEnv(environ)
		if got == nil {
			got = []string{}
		}
		if !reflect.DeepEqual(got, *c.UnusedEnv) {
			t.Errorf("unused env %q, want %q", got, *c.UnusedEnv)
		}
	}
	if c.UnusedEnvWhy != nil {
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		vars := l.UnusedEnvVars(environ)
		if len(vars) != len(c.UnusedEnvWhy) {
			t.Errorf("unused env %q; want reasons for %d variables", vars, len(c.UnusedEnvWhy))
		}
		for _, v := range vars {
			subs, ok := c.UnusedEnvWhy[v.Name]
			if !ok {
				t.Errorf("unused env %s (%s) has no reason in the case", v.Name, v.Why)
			}
			for _, sub := range subs {
				if !strings.Contains(v.Why, sub) {
					t.Errorf("unused env %s: why %q lacks %q", v.Name, v.Why, sub)
				}
			}
		}
	}
	for i, q := range c.Queries {
		runQuery(t, i, l, q)
	}
}

func runQuery(t *testing.T, i int, l *params.Loader, q confQuery) {
	t.Helper()
	var shape []int
	if err := json.Unmarshal(q.Shape, &shape); err != nil {
		var text string
		if err := json.Unmarshal(q.Shape, &text); err != nil {
			t.Fatalf("query %d: shape %s is neither dims nor text", i, q.Shape)
		}
		if shape, err = families.ParseShape(text); err != nil {
			checkError(t, "query", "invalid_shape", err, q.Error)
			return
		}
	}
	r, err := l.Resolve(q.Kernel, q.DType, shape)
	if err != nil {
		var ee *params.EnvError
		kind := "other"
		switch {
		case errors.As(err, &ee):
			kind = "env"
		case errors.Is(err, params.ErrUnknownFamily):
			kind = "unknown_family"
		case errors.Is(err, params.ErrUnknownDType):
			kind = "unknown_dtype"
		case errors.Is(err, params.ErrInvalidShape):
			kind = "invalid_shape"
		case errors.Is(err, params.ErrNoSpace):
			kind = "no_space"
		case errors.Is(err, params.ErrDefaults):
			kind = "defaults"
		}
		if q.Error != nil && len(q.Error.Vars) > 0 {
			var names []string
			if ee != nil {
				for _, v := range ee.Vars {
					names = append(names, v.Name)
				}
			}
			if !reflect.DeepEqual(names, q.Error.Vars) {
				t.Errorf("query %d: error variables %q, want %q", i, names, q.Error.Vars)
			}
		}
		checkError(t, "query", kind, err, q.Error)
		return
	}
	if q.Error != nil {
		t.Fatalf("query %d (%s %s %v): resolved %+v; want a %s error", i, q.Kernel, q.DType, shape, r, q.Error.Kind)
	}
	if q.Params != nil {
		got := map[string][2]any{}
		for k, v := range r.Params {
			got[k] = [2]any{float64(v.Value), v.Source}
		}
		if !reflect.DeepEqual(got, q.Params) {
			t.Errorf("query %d (%s %s %v): params\n got  %v\n want %v", i, q.Kernel, q.DType, shape, got, q.Params)
		}
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"class", r.Class, q.Class}, {"device", r.Device, q.Device}, {"backend", r.Backend, q.Backend},
		{"matched", r.Matched, q.Matched}, {"use_baseline", r.UseBaseline, q.UseBaseline},
		{"baseline", r.Baseline, q.Baseline}, {"use_source", r.UseSource, q.UseSource},
	} {
		if rv := reflect.ValueOf(f.want); rv.IsNil() {
			continue
		} else if !reflect.DeepEqual(f.got, rv.Elem().Interface()) {
			t.Errorf("query %d (%s %s %v): %s = %v, want %v", i, q.Kernel, q.DType, shape, f.name, f.got, rv.Elem().Interface())
		}
	}
}

func checkError(t *testing.T, stage, kind string, err error, want *confError) {
	t.Helper()
	if want == nil {
		t.Fatalf("%s: unexpected %s error: %v", stage, kind, err)
	}
	if kind != want.Kind {
		t.Errorf("%s: error kind %s, want %s: %v", stage, kind, want.Kind, err)
	}
	if want.Path != nil {
		var pe *params.PathError
		if !errors.As(err, &pe) || pe.Path != *want.Path {
			t.Errorf("%s: error %v; want JSON path %s", stage, err, *want.Path)
		}
	}
	for _, sub := range want.Contains {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("%s: error %q lacks %q", stage, err.Error(), sub)
		}
	}
}

// sameJSON compares a Go value with one decoded from JSON.
func sameJSON(got, want any) bool {
	b, err := json.Marshal(got)
	if err != nil {
		return false
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		return false
	}
	return reflect.DeepEqual(g, want)
}
