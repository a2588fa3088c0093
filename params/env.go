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
// os.Environ returns it: NAME=VALUE) that carry the loader's prefix but that
// the loader never reads: not <PREFIX>_PARAMS, <PREFIX>_DEVICE or
// <PREFIX>_DEVICE_NAME, not <PREFIX>_<FAMILY>_USE for a known family and not
// <PREFIX>_<FAMILY>_<PARAM> for any parameter of any backend of a known
// family. Resolve ignores such variables (a typo such as
// KERNTUNE_GEMV_NT_XX changes nothing); tools call UnusedEnv to warn about
// them. An application that shares the prefix with its own settings may see
// those listed too.
func (l *Loader) UnusedEnv(environ []string) []string {
	p := l.prefix + "_"
	seen := map[string]bool{}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, p) || l.knownEnv[name] || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
