package spec

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kerntune/kerntune/kernels"
)

// pyDriver runs a reference.python function on inputs written to a
// directory (see its doc string).
//
//go:embed pyref_driver.py
var pyDriver []byte

// PythonRef is a float64 reference written as a NumPy function.
type PythonRef struct {
	// File is the Python file, relative to the spec's directory.
	File string `json:"file"`
	// Function is called as function(**kw) (default "reference"): kw holds
	// each input by name (a float64 array of its shape; a constant with
	// value a float64 scalar, with values a 1-d array), each dim (int) and
	// dtype ("f32", "f16" or "bf16"). It returns one array, a tuple or
	// list of arrays in output order, or a dict by output name.
	Function string `json:"function,omitempty"`
}

// numpyAdvice is how to get a Python with numpy for reference.python.
const numpyAdvice = "install numpy (apt-get install python3-numpy, or pip install numpy) or set KERNTUNE_PYTHON to a python3 that has it"

var pythonCache sync.Map // "KERNTUNE_PYTHON\x00PATH" → pythonFound

type pythonFound struct {
	path string
	err  error
}

// hasNumpy reports whether python imports numpy.
func hasNumpy(python string) bool {
	return exec.Command(python, "-c", "import numpy").Run() == nil
}

// findPython is the interpreter that runs Python references:
// $KERNTUNE_PYTHON, else python3 on PATH where it has numpy, else
// /usr/bin/python3 (the system's, where a distribution's numpy goes when a
// python3 of a version manager comes first on PATH).
func findPython() (string, error) {
	key := os.Getenv("KERNTUNE_PYTHON") + "\x00" + os.Getenv("PATH")
	if f, ok := pythonCache.Load(key); ok {
		return f.(pythonFound).path, f.(pythonFound).err
	}
	f := locatePython()
	pythonCache.Store(key, f)
	return f.path, f.err
}

func locatePython() pythonFound {
	if p := os.Getenv("KERNTUNE_PYTHON"); p != "" {
		if !hasNumpy(p) {
			return pythonFound{err: fmt.Errorf("KERNTUNE_PYTHON=%s cannot import numpy; %s", p, numpyAdvice)}
		}
		return pythonFound{path: p}
	}
	var tried []string
	if p, err := exec.LookPath("python3"); err == nil {
		if hasNumpy(p) {
			return pythonFound{path: p}
		}
		tried = append(tried, p)
	}
	const system = "/usr/bin/python3"
	if _, err := os.Stat(system); err == nil {
		if hasNumpy(system) {
			return pythonFound{path: system}
		}
		tried = append(tried, system)
	}
	if len(tried) == 0 {
		return pythonFound{err: fmt.Errorf("no python3 found (PATH, /usr/bin/python3); install python3 with numpy or set KERNTUNE_PYTHON")}
	}
	return pythonFound{err: fmt.Errorf("no python3 with numpy (tried %s); %s", strings.Join(tried, ", "), numpyAdvice)}
}

// compilePython checks reference.python when the spec is compiled.
func (c *compiler) compilePython(r *PythonRef) {
	if r.Function == "" {
		r.Function = "reference"
	}
	switch {
	case r.File == "":
		c.fail("reference.python.file", "", "required: the Python file (relative to the spec) that defines the reference function")
		return
	case !identRE.MatchString(r.Function):
		c.fail("reference.python.function", "", "%q is not a Python identifier", r.Function)
		return
	}
	if _, err := os.Stat(c.pythonFile(r)); err != nil {
		c.fail("reference.python.file", "", "%v (the path is relative to the spec's directory)", err)
	}
	c.py = r
}

func (c *compiler) pythonFile(r *PythonRef) string {
	if filepath.IsAbs(r.File) {
		return r.File
	}
	p, err := filepath.Abs(filepath.Join(c.dir, r.File))
	if err != nil {
		return filepath.Join(c.dir, r.File)
	}
	return p
}

// pyInput is one input of the manifest the driver reads.
type pyInput struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Path   string `json:"path,omitempty"`
	Scalar bool   `json:"scalar,omitempty"`
}

// pyManifest is what the driver is told.
type pyManifest struct {
	File     string         `json:"file"`
	Function string         `json:"function"`
	Inputs   []pyInput      `json:"inputs"`
	Dims     map[string]int `json:"dims"`
	DType    string         `json:"dtype"`
	Outputs  []string       `json:"outputs"`
}

// pythonReference computes every output of a case by the reference.python
// function, in one Python process.
func (c *compiler) pythonReference(dt kernels.DType, cs kernels.Case, in [][]float32) ([]float64, error) {
	r := c.py
	file := c.pythonFile(r)
	where := fmt.Sprintf("%s: reference.python (%s, function %s)", c.file, r.File, r.Function)
	python, err := findPython()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	dir, err := os.MkdirTemp("", "kerntune-ref-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	defer os.RemoveAll(dir)

	m := pyManifest{File: file, Function: r.Function, Dims: map[string]int{}, DType: string(dt)}
	for i, d := range c.dims {
		if i < len(cs.Shape) {
			m.Dims[d] = cs.Shape[i]
		}
	}
	for _, x := range c.inOps {
		if _, clash := m.Dims[x.name]; clash || x.name == "dtype" {
			return nil, fmt.Errorf("%s: input %s is named like a dim or dtype; the function takes each by name (rename the input or the dim)", where, x.name)
		}
	}
	present := map[string]int{}
	for i, x := range c.present(cs) {
		present[x.name] = i
	}
	for _, x := range c.inOps {
		pi := pyInput{Name: x.name}
		i, ok := present[x.name]
		if !ok || i >= len(in) {
			m.Inputs = append(m.Inputs, pi) // an absent optional input: None
			continue
		}
		l, err := c.layoutOf(x, cs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		pi.Shape = l.dims
		if pi.Shape == nil {
			pi.Shape = []int{}
		}
		pi.Scalar = x.cnst >= 0 && c.s.Source.MLX.Constants[x.cnst].Value != ""
		pi.Path = fmt.Sprintf("in_%d.bin", len(m.Inputs))
		if err := writeFloat64s(filepath.Join(dir, pi.Path), c.logical(x, cs, in[i])); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		m.Inputs = append(m.Inputs, pi)
	}
	var lens []int
	env := c.env(cs.Shape, nil)
	for _, oi := range c.outs {
		m.Outputs = append(m.Outputs, c.s.Buffers[oi].Name)
		n, err := c.lengths[oi].evalInt(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		lens = append(lens, n)
	}
	mj, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mj, 0o644); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	driver := filepath.Join(dir, "driver.py")
	if err := os.WriteFile(driver, pyDriver, 0o644); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	cmd := exec.Command(python, driver, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		code := -1
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		switch code {
		case 2:
			return nil, fmt.Errorf("%s on %s: %s", where, cs, msg)
		case 3:
			return nil, fmt.Errorf("%s raised on %s:\n%s", where, cs, tail(msg, 12))
		case 4:
			return nil, fmt.Errorf("%s: %s cannot import numpy (%s); %s", where, python, msg, numpyAdvice)
		}
		return nil, fmt.Errorf("%s: %s: %v: %s", where, python, err, tail(msg, 12))
	}
	var res struct{ Count int }
	rb, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err == nil {
		err = json.Unmarshal(rb, &res)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading the driver's result: %w", where, err)
	}
	if res.Count != len(lens) {
		return nil, fmt.Errorf("%s returned %d array(s) on %s; the kernel has %d output(s) (%s): return one array, a tuple in that order or a dict by name",
			where, res.Count, cs, len(lens), strings.Join(m.Outputs, ", "))
	}
	var out []float64
	for j, n := range lens {
		v, err := readFloat64s(filepath.Join(dir, fmt.Sprintf("out_%d.bin", j)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if len(v) != n {
			return nil, fmt.Errorf("%s: output %s has %d elements on %s, want %d (the buffer's length)", where, m.Outputs[j], len(v), cs, n)
		}
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s: output %s element %d is %g (not finite) on %s; the reference must give finite values", where, m.Outputs[j], i, x, cs)
			}
		}
		out = append(out, v...)
	}
	return out, nil
}

// tail is the last n lines of s: a traceback's innermost frames and its
// exception.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func writeFloat64s(path string, v []float64) error {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return os.WriteFile(path, b, 0o644)
}

func readFloat64s(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not float64s", path, len(b))
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}
