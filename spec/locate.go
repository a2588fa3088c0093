package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kerntune/kerntune/kernels/gpu"
)

// Origin is where a line of a candidate's generated source comes from in
// the user's files, so that a compiler's error can cite the spec rather
// than a generated file.
type Origin struct {
	// Field is the spec field that holds the text: source.body,
	// source.body_file, source.metal_file, source.mlx.source, ...
	Field string
	// Line is the line within that text, from 1.
	Line int
	// File and FileLine are where the line is written: the spec file (a
	// text written in its JSON) or the source file a *_file field names.
	File     string
	FileLine int
	// Text is the line itself.
	Text string
}

func (o Origin) String() string {
	return fmt.Sprintf("%s:%d (%s line %d)", o.File, o.FileLine, o.Field, o.Line)
}

// piece is one text of the user's that generated sources hold verbatim.
type piece struct {
	field, text string
	// file is the source file holding text, "" for text written in the
	// spec's JSON under field.
	file string
}

// pieces lists the user's texts of the kernel's Metal source.
func (cp *Compiled) pieces() []piece {
	src := cp.Spec.Source
	file := func(name string) string {
		if filepath.IsAbs(name) {
			return name
		}
		return filepath.Join(filepath.Dir(cp.File), name)
	}
	var ps []piece
	add := func(field, text, name string, inJSON bool) {
		switch {
		case text == "":
		case inJSON:
			ps = append(ps, piece{field: field, text: text})
		case name != "":
			ps = append(ps, piece{field: field, text: text, file: file(name)})
		}
	}
	b := cp.Body
	add("source.body", b.Source, "", src.Body != "")
	add("source.body_file", b.Source, src.BodyFile, false)
	add("source.metal_file", b.Raw[gpu.Metal], src.MetalFile, false)
	if m := src.MLX; m != nil && b.MLX != nil {
		add("source.mlx.source", b.MLX.Source, "", m.Source != "")
		add("source.mlx.source_file", b.MLX.Source, m.SourceFile, false)
		add("source.mlx.header", b.MLX.Header, "", m.Header != "")
		add("source.mlx.header_file", b.MLX.Header, m.HeaderFile, false)
	}
	return ps
}

// Locate maps line (from 1) of src, a source generated from the spec
// (Body.SourceFor), to the user's text it comes from; false for a line
// kerntune generated (prelude, signature, parameter macros).
func (cp *Compiled) Locate(src string, line int) (Origin, bool) {
	for _, p := range cp.pieces() {
		at := strings.LastIndex(src, p.text)
		if at < 0 && cp.Body.MLX != nil && cp.Body.MLX.Format && strings.HasPrefix(p.field, "source.mlx.") {
			at = lastFormatted(src, p.text)
		}
		if at < 0 {
			continue
		}
		first := 1 + strings.Count(src[:at], "\n")
		lines := strings.Split(p.text, "\n")
		k := line - first + 1
		if k < 1 || k > len(lines) {
			continue
		}
		o := Origin{Field: p.field, Line: k, File: p.file, FileLine: k, Text: lines[k-1]}
		if p.file == "" {
			o.File, o.FileLine = cp.File, cp.jsonLine(p.field, k)
		}
		return o, true
	}
	return Origin{}, false
}

// jsonLine is the line of the spec file that holds line k of the text
// field: a string (every line of it is on one line of the file) or an
// array of strings, one or more lines each. 0 when it cannot be found.
func (cp *Compiled) jsonLine(field string, k int) int {
	strs := stringLines(cp.data)
	if s, ok := strs[field]; ok {
		return s.line
	}
	n := 0
	for i := 0; ; i++ {
		s, ok := strs[fmt.Sprintf("%s[%d]", field, i)]
		if !ok {
			return 0
		}
		n += 1 + strings.Count(s.value, "\n")
		if k <= n {
			return s.line
		}
	}
}

type jsonString struct {
	line  int
	value string
}

// stringLines returns every string value of a JSON document by its path
// (source.body, source.body[2]) with the line it is on.
func stringLines(data []byte) map[string]jsonString {
	out := map[string]jsonString{}
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			for i := 0; dec.More(); i++ {
				p := fmt.Sprintf("%s[%d]", path, i)
				if t == '{' {
					key, err := dec.Token()
					if err != nil {
						return err
					}
					p = fmt.Sprint(key)
					if path != "" {
						p = path + "." + p
					}
				}
				if err := walk(p); err != nil {
					return err
				}
			}
			_, err = dec.Token() // the closing delimiter
			return err
		case string:
			// A JSON string holds no raw newline: it ends on the line it begins.
			out[path] = jsonString{line: 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n")), value: t}
		}
		return nil
	}
	_ = walk("") // a spec that compiled is valid JSON
	return out
}

// lastFormatted is the offset of the last text in src that text, a
// Python format string, fills to (any integers in its placeholders; one
// line of text per line of src, as filling keeps the lines), or -1.
func lastFormatted(src, text string) int {
	const hole = "\x00"
	pattern, err := pyFormat(text, func(string) (string, bool) { return hole, true })
	if err != nil {
		return -1
	}
	re, err := regexp.Compile(strings.ReplaceAll(regexp.QuoteMeta(pattern), hole, "-?[0-9]+"))
	if err != nil {
		return -1
	}
	locs := re.FindAllStringIndex(src, -1)
	if len(locs) == 0 {
		return -1
	}
	return locs[len(locs)-1][0]
}
