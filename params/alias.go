package params

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kerntune/kerntune/params/families"
)

// aliasState is an alias that applies to one family's space.
type aliasState struct {
	Alias
	params []paramState // the space's parameters, in the alias's order
	source string       // env:<Name>
}

// validateAliases checks the aliases an application declares and claims
// their variable names.
func validateAliases(fams map[string]*families.Family, aliases []Alias, claim func(name, what string) error) error {
	for i, a := range aliases {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("params: Options.Aliases[%d] (%s): %s", i, a.Name, fmt.Sprintf(format, args...))
		}
		if !identRE.MatchString(a.Name) {
			return fail("the name %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", a.Name)
		}
		if a.Sep == "" || strings.ContainsAny(a.Sep, "0123456789+-") {
			return fail("the separator %q must be non-empty and hold no digit or sign, e.g. \"x\"", a.Sep)
		}
		if len(a.Params) == 0 {
			return fail("names no parameters")
		}
		seen := map[string]bool{}
		for _, p := range a.Params {
			if !families.ValidParamName(p) {
				return fail("parameter name %q is not an upper-case identifier", p)
			}
			if seen[p] {
				return fail("names parameter %s twice", p)
			}
			seen[p] = true
		}
		if a.Family != "" {
			fam, ok := fams[a.Family]
			if !ok {
				return fail("%v %q", ErrUnknownFamily, a.Family)
			}
			if !anySpaceHas(fam, a.Params) {
				return fail("%s has no parameter space with all of %s", a.Family, strings.Join(a.Params, ", "))
			}
		} else {
			found := false
			for _, key := range sortedKeys(fams) {
				found = found || anySpaceHas(fams[key], a.Params)
			}
			if !found {
				return fail("no family has a parameter space with all of %s", strings.Join(a.Params, ", "))
			}
		}
		what := "alias of " + strings.Join(a.Params, ", ")
		if a.Family != "" {
			what = "alias of " + a.Family + " " + strings.Join(a.Params, ", ")
		}
		if err := claim(a.Name, what); err != nil {
			return err
		}
	}
	return nil
}

func anySpaceHas(f *families.Family, names []string) bool {
	for _, s := range f.Spaces {
		if spaceHas(s, names) {
			return true
		}
	}
	return false
}

func spaceHas(s *families.Space, names []string) bool {
	for _, n := range names {
		if _, ok := s.Param(n); !ok {
			return false
		}
	}
	return true
}

// aliasesFor returns, in declaration order, the aliases that apply to
// family's space sp: those naming the family, and those naming none whose
// parameters sp has all. An alias naming the family whose parameters sp
// lacks (another kind of backend) keeps params nil: setting it is an error.
func aliasesFor(family string, sp *families.Space, aliases []Alias) []aliasState {
	var out []aliasState
	for _, a := range aliases {
		if a.Family != family && (a.Family != "" || !spaceHas(sp, a.Params)) {
			continue
		}
		st := aliasState{Alias: a, source: SourceEnvPrefix + a.Name}
		if spaceHas(sp, a.Params) {
			for _, n := range a.Params {
				p, _ := sp.Param(n)
				st.params = append(st.params, paramState{Param: p})
			}
		}
		out = append(out, st)
	}
	return out
}

// parse reads the alias's variable: one value per parameter, joined by Sep,
// each a base-10 integer among the parameter's allowed values.
func (a *aliasState) parse(family, kind, raw string) ([]int, error) {
	fail := func(format string, args ...any) error {
		return &EnvError{Vars: []EnvVar{{a.Name, raw}}, Msg: fmt.Sprintf(format, args...)}
	}
	if a.params == nil {
		return nil, fail("sets %s, which %s does not have on %s backends", strings.Join(a.Params, ", "), family, kind)
	}
	parts := strings.Split(strings.TrimSpace(raw), a.Sep)
	if len(parts) != len(a.params) {
		ex := make([]string, len(a.params))
		for i, p := range a.params {
			ex[i] = strconv.Itoa(p.Default)
		}
		return nil, fail("not %d values joined by %q: write %s, e.g. %s", len(a.params), a.Sep, strings.Join(a.Params, a.Sep), strings.Join(ex, a.Sep))
	}
	vals := make([]int, len(parts))
	for i, part := range parts {
		p := a.params[i]
		v, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fail("%s (%q) is not a base-10 integer; %s %s on %s backends allows %s", p.Name, part, family, p.Name, kind, p.ValuesString())
		}
		if v < math.MinInt32 || v > math.MaxInt32 || !p.Allowed(int(v)) {
			return nil, fail("%s=%s is not an allowed value of %s %s on %s backends; allowed: %s", p.Name, strings.TrimSpace(part), family, p.Name, kind, p.ValuesString())
		}
		vals[i] = int(v)
	}
	return vals, nil
}
