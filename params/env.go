package params

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// DefaultEnvPrefix is the prefix of the environment variables the loader
// reads unless Options.EnvPrefix names another.
const DefaultEnvPrefix = "KERNTUNE"

// EnvVarName returns the variable that overrides one parameter of a family:
// <prefix>_<FAMILY>_<PARAM>, the family upper-cased with every character
// other than A-Z, 0-9 and _ turned into _. An empty prefix means
// DefaultEnvPrefix. EnvVarName("", "gemv_nt", "BN") is "KERNTUNE_GEMV_NT_BN".
func EnvVarName(prefix, family, param string) string {
	if prefix == "" {
		prefix = DefaultEnvPrefix
	}
	return prefix + "_" + envFamily(family) + "_" + param
}

// envFamily is the family's part of its variable names.
func envFamily(family string) string {
	b := []byte(strings.ToUpper(family))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// EnvVar is one environment variable and its value as read.
type EnvVar struct {
	Name  string
	Value string
}

// EnvError is an environment variable whose value cannot be used: not a
// base-10 integer, not among the parameter's allowed values, or (with the
// other variables set for the same family, all listed in Vars) breaking the
// family's constraints for the shape being resolved.
type EnvError struct {
	Vars []EnvVar
	// Msg says what is wrong and what is allowed.
	Msg string
}

func (e *EnvError) Error() string {
	var b strings.Builder
	b.WriteString("params: environment ")
	for i, v := range e.Vars {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", v.Name, v.Value)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// parseEnv reads the value of p's variable: a base-10 integer (surrounding
// spaces are ignored) among p's allowed values.
func (p *paramState) parseEnv(family, kind, raw string) (int, error) {
	s := strings.TrimSpace(raw)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, &EnvError{Vars: []EnvVar{{p.env, raw}},
			Msg: fmt.Sprintf("not a base-10 integer; %s %s on %s backends allows %s", family, p.Name, kind, p.ValuesString())}
	}
	if v < math.MinInt32 || v > math.MaxInt32 || !p.Allowed(int(v)) {
		return 0, &EnvError{Vars: []EnvVar{{p.env, raw}},
			Msg: fmt.Sprintf("not an allowed value of %s %s on %s backends; allowed: %s", family, p.Name, kind, p.ValuesString())}
	}
	return int(v), nil
}

// UnusedEnv returns, sorted, the names of the variables in environ (as
// os.Environ returns it: NAME=VALUE) that carry the loader's prefix but
// have no effect on this loader: variables it never reads (not
// <PREFIX>_PARAMS, <PREFIX>_DEVICE or <PREFIX>_DEVICE_NAME, not
// <PREFIX>_<FAMILY>_USE for a known family and not
// <PREFIX>_<FAMILY>_<PARAM> for any parameter of any backend of a known
// family: a typo such as KERNTUNE_GEMV_NT_XX), and variables it does not
// read for this device: a parameter of another backend's space
// (KERNTUNE_GEMV_NT_TG on a CPU device), every variable of a family with no
// space for the device's backend, <PREFIX>_PARAMS when the caller named the
// file, <PREFIX>_DEVICE when Options.Device is set. Resolve ignores them;
// tools call UnusedEnv or UnusedEnvVars (which says why) to warn about
// them. An application that shares the prefix with its own settings may see
// those listed too.
func (l *Loader) UnusedEnv(environ []string) []string {
	vars := l.UnusedEnvVars(environ)
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name
	}
	return out
}

// UnusedVar is a variable that has no effect, and why.
type UnusedVar struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// UnusedEnvVars is UnusedEnv with the reason for each variable, sorted by name.
func (l *Loader) UnusedEnvVars(environ []string) []UnusedVar {
	p := l.prefix + "_"
	seen := map[string]bool{}
	var out []UnusedVar
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, p) || seen[name] {
			continue
		}
		seen[name] = true
		if why, ok := l.unread[name]; ok {
			out = append(out, UnusedVar{name, why})
		} else if !l.knownEnv[name] {
			out = append(out, UnusedVar{name, l.unknownVarWhy(name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// unknownVarWhy says why a variable with the loader's prefix names nothing
// it reads: the family it starts with (the longest match) has no such
// parameter, or it names no family.
func (l *Loader) unknownVarWhy(name string) string {
	rest := strings.TrimPrefix(name, l.prefix+"_")
	fam := ""
	for e, key := range l.envFams {
		if strings.HasPrefix(rest, e+"_") && len(e) > len(envFamily(fam)) {
			fam = key
		}
	}
	if fam == "" {
		return fmt.Sprintf("not a variable the loader reads: %s names no kernel family (known: %s) and no setting (%s_PARAMS, %s_DEVICE, %s_DEVICE_NAME)",
			name, strings.Join(l.famNames, ", "), l.prefix, l.prefix, l.prefix)
	}
	fs := l.fams[fam]
	if fs == nil || fs.space == nil {
		return fmt.Sprintf("not a variable the loader reads: %s has no parameter %s", fam, strings.TrimPrefix(rest, envFamily(fam)+"_"))
	}
	return fmt.Sprintf("not a variable the loader reads: %s has no parameter %s (on %s backends it has %s)",
		fam, strings.TrimPrefix(rest, envFamily(fam)+"_"), fs.kind, strings.Join(fs.names, ", "))
}
