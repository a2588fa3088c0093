package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kerntune/kerntune/params/paramfile"
)

// timeParts are the disjoint parts of an entry's tuning time
// (paramfile.TuneTime), in the order they are stacked, with their colours.
var timeParts = []struct {
	name string
	col  color.Color
	of   func(t *paramfile.TuneTime) float64
}{
	{"measure (timed runs)", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.MeasureS }},
	{"verify", color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.VerifyS }},
	{"compile (waiting)", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.CompileS }},
	{"search", color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.SearchS }},
	{"setup", color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.SetupS }},
	{"journal", color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.JournalS }},
	{"other", color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff}, func(t *paramfile.TuneTime) float64 { return t.OtherS }},
}

// timePlot: per entry with a recorded time, one horizontal bar of its
// tuning time stacked by part, labelled with the candidates it measured
// and the share of the time the device was busy. It reports false when no
// entry has a time.
func timePlot(path, device string, rows []Row) (bool, error) {
	var timed []Row
	for _, r := range rows {
		if r.Time != nil && r.Time.WallS > 0 {
			timed = append(timed, r)
		}
	}
	if len(timed) == 0 {
		return false, nil
	}
	// Empty rows on top hold the legend, clear of the bars.
	const legendRows = 5
	n := len(timed) + legendRows
	labels := make([]string, n)
	maxWall := 0.0
	for i, r := range timed {
		labels[n-legendRows-1-i] = r.Kernel + " " + r.Key // the first entry on top
		maxWall = math.Max(maxWall, r.Time.WallS)
	}
	p := newPlot("where the tuning time went on " + device)
	p.X.Label.Text = "seconds of the entry's tuning (device busy: measure and the verification runs)"
	barW := vg.Points(9)
	var below *plotter.BarChart
	for _, part := range timeParts {
		vals := make(plotter.Values, n)
		for i, r := range timed {
			vals[n-legendRows-1-i] = part.of(r.Time)
		}
		bc, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return false, err
		}
		bc.Horizontal, bc.Color, bc.LineStyle.Width = true, part.col, 0
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		p.Legend.Add(part.name, bc)
	}
	var xys plotter.XYs
	var texts []string
	for i, r := range timed {
		xys = append(xys, plotter.XY{X: r.Time.WallS + maxWall*0.01, Y: float64(n - legendRows - 1 - i)})
		texts = append(texts, fmt.Sprintf("%d measured, busy %.0f%%", r.Measured, r.Time.BusyPct))
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return false, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(8)
		lb.TextStyle[i].Font.Variant = "Sans"
		lb.TextStyle[i].YAlign = -0.5
	}
	p.Add(lb)
	// Room on the right for the labels.
	p.X.Min, p.X.Max = 0, maxWall*1.45
	p.NominalY(labels...)
	p.Legend.Top, p.Legend.Left = true, false
	h := vg.Length(n)*barW*2.2 + 3*vg.Centimeter
	return true, savePlots(path, 20*vg.Centimeter, h, [][]*plot.Plot{{p}})
}
