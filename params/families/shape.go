package families

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseShape parses a shape written as its dims joined by "x", as on the
// command line and in exact-shape entry keys: "1x896x4864", "4096x4096".
// Every dim must be a plain decimal number (no sign, space or other
// separator) from 1 to MaxDim. ParseShape does not know the family: a shape
// with the wrong number of dims, or one a family does not take (gemv_nt with
// m > 1), is rejected by that family's Classify, which Loader.Resolve calls.
func ParseShape(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("empty shape; write the dims joined by x, e.g. 1x896x4864")
	}
	parts := strings.Split(s, "x")
	shape := make([]int, len(parts))
	for i, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("shape %q: dim %d is empty; write the dims joined by x, e.g. 1x896x4864", s, i+1)
		}
		for j := 0; j < len(p); j++ {
			if p[j] < '0' || p[j] > '9' {
				return nil, fmt.Errorf("shape %q: dim %d (%q) is not a positive decimal integer", s, i+1, p)
			}
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n > MaxDim {
			return nil, fmt.Errorf("shape %q: dim %d (%s) exceeds the limit of %d", s, i+1, p, MaxDim)
		}
		if n < 1 {
			return nil, fmt.Errorf("shape %q: dim %d is %d; dims must be at least 1", s, i+1, n)
		}
		shape[i] = int(n)
	}
	return shape, nil
}

// ShapeString joins dims with "x", as in entry keys and on the command line.
func ShapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

// AppendShape appends ShapeString(shape) to b without allocating a string.
func AppendShape(b []byte, shape []int) []byte {
	for i, d := range shape {
		if i > 0 {
			b = append(b, 'x')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return b
}

// LooksLikeShape reports whether the suffix of an entry key is meant as a
// shape (digits and x, at least one digit) rather than a class name.
func LooksLikeShape(s string) bool {
	digit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c == 'x':
		default:
			return false
		}
	}
	return digit
}
