package families

import "regexp"

// ReservedParamName cannot name a parameter: <PREFIX>_<FAMILY>_USE is the
// variable that chooses between the tuned kernel and the baseline.
const ReservedParamName = "USE"

// DTypes returns the element types the loader accepts, in a fresh slice.
func DTypes() []string { return []string{"f32", "f16", "bf16"} }

// ValidDType reports whether s is one of DTypes.
func ValidDType(s string) bool {
	switch s {
	case "f32", "f16", "bf16":
		return true
	}
	return false
}

var paramNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// ValidParamName reports whether s is an upper-case identifier, as parameter names must be.
func ValidParamName(s string) bool { return paramNameRE.MatchString(s) }
