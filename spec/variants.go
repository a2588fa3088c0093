package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Variant is one entry of a variants manifest in the style of a Swift
// harness's variants_enhanced.json: a named kernel variant whose name
// carries its dispatch geometry as tokens (bn64, bk128, tg128, unroll8),
// an enabled flag, and the cases it supports.
type Variant struct {
	Name     string         `json:"name"`
	Enabled  *bool          `json:"enabled,omitempty"`
	Supports map[string]any `json:"supports,omitempty"`
}

// ImportOptions control ImportVariants.
type ImportOptions struct {
	// Name of the generated kernel (a lower-case identifier).
	Name string
	// Template is a spec whose source, buffers, scalars, launch and
	// constraints are kept; nil generates a gemv_nt skeleton with a body_file.
	Template *Spec
	// BodyFile names the body of the skeleton (default <Name>.body).
	BodyFile string
	// OnlyListed restricts the space to the combinations the manifest
	// lists, instead of their cartesian product.
	OnlyListed bool
}

// tokenRE finds a geometry token: a known prefix followed by digits, as a
// whole "_"-separated part of the name (so tgread is not tg).
var tokenRE = regexp.MustCompile(`^(bn|bk|tg|unroll)(\d+)$`)

var tokenParam = map[string]string{"bn": "BN", "bk": "BK", "tg": "TG", "unroll": "UNROLL"}

// ParseManifest reads a manifest: a JSON array of variants, or an object
// whose "variants" member is one.
func ParseManifest(data []byte, file string) ([]Variant, error) {
	var vs []Variant
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &vs); err != nil {
			return nil, &Error{File: file, Msg: jsonMsg(trimmed, err)}
		}
	} else {
		var m struct {
			Variants []Variant `json:"variants"`
		}
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return nil, &Error{File: file, Msg: jsonMsg(trimmed, err)}
		}
		vs = m.Variants
	}
	if len(vs) == 0 {
		return nil, &Error{File: file, Field: "variants", Msg: "no variants (expected an array of {name, enabled, supports} or an object with \"variants\")"}
	}
	for i, v := range vs {
		if v.Name == "" {
			return nil, &Error{File: file, Field: fmt.Sprintf("variants[%d].name", i), Msg: "missing"}
		}
	}
	return vs, nil
}

// splitVariant returns a variant's geometry tokens and its style: the name
// (after any "backend/" prefix) without them, e.g. nt_col_vec4_tgread.
func splitVariant(name string) (map[string]int, string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	toks := map[string]int{}
	var style []string
	for _, part := range strings.Split(name, "_") {
		if m := tokenRE.FindStringSubmatch(part); m != nil {
			v, _ := strconv.Atoi(m[2])
			toks[tokenParam[m[1]]] = v
			continue
		}
		style = append(style, part)
	}
	return toks, strings.Join(style, "_")
}

// ImportVariants turns the enabled variants of a manifest into a spec:
// each geometry token becomes a parameter whose values are those the
// variants use, several styles become a STYLE parameter the body branches
// on (#if STYLE == i), and supports.bias (true on every enabled variant)
// becomes bias. It returns notes on what has no counterpart in a spec
// (disabled variants, other supports flags).
func ImportVariants(vs []Variant, file string, o ImportOptions) (*Spec, []string, error) {
	if !nameRE.MatchString(o.Name) {
		return nil, nil, fmt.Errorf("import-variants: kernel name %q is not a lower-case identifier", o.Name)
	}
	var notes []string
	values := map[string]map[int]bool{}
	styleIndex := map[string]int{}
	var styles []string
	var combos []map[string]int
	bias := true
	var disabled []string
	otherFlags := map[string]bool{}
	for _, v := range vs {
		if v.Enabled != nil && !*v.Enabled {
			disabled = append(disabled, v.Name)
			continue
		}
		toks, style := splitVariant(v.Name)
		if _, ok := styleIndex[style]; !ok {
			styleIndex[style] = len(styles)
			styles = append(styles, style)
		}
		toks["STYLE"] = styleIndex[style]
		combos = append(combos, toks)
		for p, x := range toks {
			if values[p] == nil {
				values[p] = map[int]bool{}
			}
			values[p][x] = true
		}
		b, _ := v.Supports["bias"].(bool)
		bias = bias && b
		for f := range v.Supports {
			if f != "bias" {
				otherFlags[f] = true
			}
		}
	}
	if len(combos) == 0 {
		return nil, nil, &Error{File: file, Field: "variants", Msg: "every variant is disabled (enabled: false)"}
	}
	if len(styles) == 1 {
		delete(values, "STYLE")
		for _, c := range combos {
			delete(c, "STYLE")
		}
	}
	names := sortedKeys(values)
	// Variants that lack a token take its first listed value.
	for _, p := range names {
		for _, c := range combos {
			if _, ok := c[p]; !ok {
				notes = append(notes, fmt.Sprintf("some variants have no %s token; they count as %s=%d", strings.ToLower(p), p, combos[0][p]))
				break
			}
		}
	}

	s := &Spec{Name: o.Name}
	if o.Template != nil {
		t := *o.Template
		s = &t
		s.Name = o.Name
		s.Params = nil
	} else {
		body := o.BodyFile
		if body == "" {
			body = o.Name + ".body"
		}
		s.Implements = "gemv_nt"
		s.Source = Source{BodyFile: body, Function: "kt_" + o.Name}
		s.Buffers = []Buffer{{Name: "x", IO: "in", Length: "k"}, {Name: "W", IO: "in", Length: "n * k"}}
		if bias {
			s.Buffers = append(s.Buffers, Buffer{Name: "bias", IO: "in", Length: "n", Optional: true})
		}
		s.Buffers = append(s.Buffers, Buffer{Name: "y", IO: "out", Length: "n"})
		s.Scalars = []Scalar{{Name: "n", Type: "int", Value: "n"}, {Name: "k", Type: "int", Value: "k"}, {Name: "has_bias", Type: "int", Value: "bias"}}
		s.Launch = Launch{Threads: "TG", Grid: []string{"cdiv(n, BN)"}}
		if values["TG"] == nil || values["BN"] == nil {
			notes = append(notes, "the variants carry no tg or bn token: edit launch.threads and launch.grid")
		}
	}
	s.Bias = bias && s.Implements == "gemv_nt"
	for _, p := range names {
		var vals []int
		for x := range values[p] {
			vals = append(vals, x)
		}
		sort.Ints(vals)
		def := combos[0][p]
		if _, ok := combos[0][p]; !ok {
			def = vals[0]
		}
		doc := "from the variants' " + strings.ToLower(p) + " tokens"
		if p == "STYLE" {
			var m []string
			for i, st := range styles {
				m = append(m, fmt.Sprintf("%d=%s", i, st))
			}
			doc = "variant style, for #if STYLE == i in the body: " + strings.Join(m, ", ")
		}
		s.Params = append(s.Params, Param{Name: p, Values: vals, Default: &def, Doc: doc})
	}
	if o.OnlyListed {
		seen := map[string]bool{}
		var alts []string
		for _, c := range combos {
			var terms []string
			for _, p := range names {
				v, ok := c[p]
				if !ok {
					v = combos[0][p]
				}
				terms = append(terms, fmt.Sprintf("%s == %d", p, v))
			}
			t := "(" + strings.Join(terms, " && ") + ")"
			if !seen[t] {
				seen[t] = true
				alts = append(alts, t)
			}
		}
		s.Constraints = append(s.Constraints, strings.Join(alts, " || "))
	}
	var doc []string
	if o.Template != nil && o.Template.Doc != "" {
		doc = append(doc, o.Template.Doc)
	}
	doc = append(doc, fmt.Sprintf("imported from %s: %d enabled variants", file, len(combos)))
	if len(disabled) > 0 {
		doc = append(doc, fmt.Sprintf("%d disabled variants left out: %s", len(disabled), strings.Join(disabled, ", ")))
		notes = append(notes, fmt.Sprintf("%d disabled variants left out", len(disabled)))
	}
	if !bias {
		notes = append(notes, "supports.bias is not true on every enabled variant: bias cases are not tuned")
	}
	for _, f := range sortedKeys(otherFlags) {
		notes = append(notes, fmt.Sprintf("supports.%s has no counterpart in a spec (restrict the shapes or add a constraint by hand)", f))
	}
	s.Doc = strings.Join(doc, "; ")
	return s, notes, nil
}
