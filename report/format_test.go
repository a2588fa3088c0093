package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerntune/kerntune/internal/testutil"
	"github.com/kerntune/kerntune/params/paramfile"
)

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

// A share of the floor above 100 % is marked; one that rounds to 100 is not.
func TestFloorCell(t *testing.T) {
	for _, c := range []struct {
		pct    float64
		want   string
		beaten bool
	}{
		{0, "-", false}, {0.123, "0.12 %", false}, {4.56, "4.6 %", false}, {91.2, "91 %", false},
		{100.4, "100 %", false}, {104.2, "104 %*", true}, {456, "456 %*", true},
	} {
		if got, beaten := FloorCell(c.pct); got != c.want || beaten != c.beaten {
			t.Errorf("FloorCell(%v) = %q, %v; want %q, %v", c.pct, got, beaten, c.want, c.beaten)
		}
	}
}

// report marks an entry above 100 % of its floor and says why under the
// table; a table without one has no such note.
func TestReportFloorNote(t *testing.T) {
	for _, pct := range []float64{91, 104.2} {
		pf := testFile()
		pf.Devices["cpu:m1"].Kernels["gemv_nt"]["f32/mid"].Roofline = &paramfile.RooflineSummary{PctOfFloor: pct, BoundByData: true}
		dir := t.TempDir()
		if _, err := Write(pf, nil, Options{Dir: dir, Format: "svg", Source: "p.json"}); err != nil {
			t.Fatal(err)
		}
		md := testutil.ReadFile(t, filepath.Join(dir, "report.md"))
		cell, beaten := FloorCell(pct)
		if !strings.Contains(string(md), "| "+cell+" |") || strings.Contains(string(md), FloorNote) != beaten {
			t.Errorf("%v %% of the floor: want the cell %q and the note %v:\n%s", pct, cell, beaten, md)
		}
	}
}
