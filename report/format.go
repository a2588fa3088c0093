package report

import "fmt"

// What kerntune prints in more than one place (show, bench, report and
// the other commands) is formatted here, once, so that the same file never
// reads differently in two of them.

// Speedup is how many times faster the tuned kernel is than a reference:
// reference time / tuned time, so above 1 means the tuned kernel is
// faster. It is 0 when either time is missing (not positive). It is not
// rounded: rounding happens once, where it is printed (SpeedupCell).
func Speedup(refUS, tunedUS float64) float64 {
	if !(refUS > 0) || !(tunedUS > 0) {
		return 0
	}
	return refUS / tunedUS
}

// SpeedupCell prints Speedup(refUS, tunedUS) with two decimals and "×",
// or "-" when either time is missing.
func SpeedupCell(refUS, tunedUS float64) string {
	s := Speedup(refUS, tunedUS)
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", s)
}

// Plural is n followed by the noun: one for n == 1, many otherwise
// ("1 entry", "2 entries", "0 entries").
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
