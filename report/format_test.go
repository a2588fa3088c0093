package report

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 entries"}, {1, "1 entry"}, {2, "2 entries"}, {-1, "-1 entries"}} {
		if got := Plural(c.n, "entry", "entries"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
