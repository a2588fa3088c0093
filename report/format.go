package report

import (
	"fmt"
	"math"
)

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

// FloorCell prints a % of the roofline floor (floor time / measured time).
// Small shares get the digits that tell them apart. A floor is a floor, so
// more than 100 % means the figure it rests on was beaten: for a
// memory-bound entry the measured copy bandwidth (an estimate: data in the
// cache streams faster), else the arithmetic peak. Such a share is marked
// with "*" and beaten is set, for the note FloorNote gives.
func FloorCell(pct float64) (cell string, beaten bool) {
	switch {
	case !(pct > 0) || math.IsInf(pct, 0):
		return "-", false
	case pct < 1:
		return fmt.Sprintf("%.2f %%", pct), false
	case pct < 10:
		return fmt.Sprintf("%.1f %%", pct), false
	case math.Round(pct) > 100:
		return fmt.Sprintf("%.0f %%*", pct), true
	}
	return fmt.Sprintf("%.0f %%", pct), false
}

// FloorNote is the footnote of a table with a cell FloorCell marked.
const FloorNote = "* above 100 %: the kernel beat the figure its floor rests on — the measured copy bandwidth (an estimate: data the cache holds streams faster) for memory-bound families, else the arithmetic peak of the units it runs on; the floor is then not exact"

// Plural is n followed by the noun: one for n == 1, many otherwise
// ("1 entry", "2 entries", "0 entries").
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
