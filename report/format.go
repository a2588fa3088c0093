package report

import "fmt"

// What kerntune prints in more than one place (show, bench, report and
// the other commands) is formatted here, once, so that the same file never
// reads differently in two of them.

// Plural is n followed by the noun: one for n == 1, many otherwise
// ("1 entry", "2 entries", "0 entries").
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
