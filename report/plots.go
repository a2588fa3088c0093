package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kerntune/kerntune/internal/trace"
)

var (
	colWinner   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	colDefault  = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff} // orange
	colBaseline = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff} // green
	colAll      = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
)

// savePlots draws plots, tiled in rows × cols, to path as SVG or PNG (by extension).
func savePlots(path string, w, h vg.Length, rows [][]*plot.Plot) error {
	var c vg.CanvasWriterTo
	var sc *svgCanvas
	if strings.HasSuffix(path, ".png") {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
	} else {
		sc = &svgCanvas{Canvas: vgsvg.New(w, h)}
		c = sc
	}
	dc := draw.New(c)
	// A white background, so the plots read on dark pages too.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	for i := range rows {
		for len(rows[i]) < cols {
			rows[i] = append(rows[i], nil)
		}
	}
	tiles := draw.Tiles{Rows: len(rows), Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 5}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		for j, p := range rows[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("report: drawing %s: %w", filepath.Base(path), err)
	}
	data := buf.Bytes()
	if sc != nil {
		data = sc.fixText(data)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("report: writing %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// svgFontFamily is the font list of the SVG plots. The layout is measured
// with Liberation Sans (gonum/plot's font); Arimo, Arial and Helvetica
// have the same metrics, so a viewer without Liberation Sans lays the text
// out alike; sans-serif is the last resort.
const svgFontFamily = "font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;"

// svgCanvas is an SVG canvas that records the width the layout gave every
// string, so that the written file can hold each text to that width
// (textLength): in a wider fallback font (DejaVu Sans is about 10 %
// wider) labels would otherwise run into bars and legends and clip at the
// edges.
type svgCanvas struct {
	*vgsvg.Canvas
	widths []vg.Length
}

func (c *svgCanvas) FillString(f font.Face, pt vg.Point, s string) {
	c.widths = append(c.widths, f.Width(s))
	c.Canvas.FillString(f, pt, s)
}

// fixText gives every <text> element of the written SVG, in drawing
// order, its laid-out width and the font list with generic fallbacks.
func (c *svgCanvas) fixText(svg []byte) []byte {
	svg = bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"), []byte(svgFontFamily))
	const tag = "<text "
	if bytes.Count(svg, []byte(tag)) != len(c.widths) {
		return svg // not the layout this was written for: leave the widths to the viewer
	}
	var out bytes.Buffer
	rest := svg
	for _, w := range c.widths {
		i := bytes.Index(rest, []byte(tag))
		out.Write(rest[:i+len(tag)])
		fmt.Fprintf(&out, `textLength="%.5g" lengthAdjust="spacingAndGlyphs" `, w.Points())
		rest = rest[i+len(tag):]
	}
	out.Write(rest)
	return out.Bytes()
}

func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	p.Y.Tick.Label.Font.Size = vg.Points(9)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	// Sans-serif text: SVG viewers substitute a font of the same kind.
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
	p.Add(plotter.NewGrid())
	return p
}

// speedupPlot: per entry, horizontal bars of the speedup over the default and
// over the baseline, with a line at 1 (no change).
func speedupPlot(path, device string, rows []Row) error {
	hasBase := false
	for _, r := range rows {
		hasBase = hasBase || r.VsBaseline > 0
	}
	// Empty rows on top hold the legend, one per entry, so that it never
	// covers a bar.
	legendRows := 1
	if hasBase {
		legendRows = 2
	}
	n := len(rows) + legendRows
	labels := make([]string, n)
	vsDef, vsBase := make(plotter.Values, n), make(plotter.Values, n)
	maxX := 1.0
	// Bars are drawn bottom-up: reverse so the first row is on top.
	for i, r := range rows {
		k := len(rows) - 1 - i
		labels[k] = r.Kernel + " " + r.Key
		vsDef[k], vsBase[k] = r.VsDefault, r.VsBaseline
		maxX = math.Max(maxX, math.Max(r.VsDefault, r.VsBaseline))
	}
	p := newPlot("tuned kernel speedup on " + device)
	p.X.Label.Text = "speedup (× faster than the reference; 1 = same)"
	p.X.Min, p.X.Max = 0, maxX*1.08
	p.X.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		step := 0.5
		if hi > 4 {
			step = 1
		}
		var ts []plot.Tick
		for x := 0.0; x <= hi; x += step / 2 {
			t := plot.Tick{Value: x}
			if math.Mod(x, step) == 0 {
				t.Label = strconv.FormatFloat(x, 'f', -1, 64) + "×"
			}
			ts = append(ts, t)
		}
		return ts
	})
	barW := vg.Points(7)
	bd, err := plotter.NewBarChart(vsDef, barW)
	if err != nil {
		return err
	}
	bd.Horizontal, bd.Color, bd.LineStyle.Width = true, colDefault, 0
	p.Add(bd)
	p.Legend.Add("vs the un-tuned default", bd)
	if hasBase {
		bd.Offset = barW / 2
		bb, err := plotter.NewBarChart(vsBase, barW)
		if err != nil {
			return err
		}
		bb.Horizontal, bb.Color, bb.LineStyle.Width, bb.Offset = true, colBaseline, 0, -barW/2
		p.Add(bb)
		p.Legend.Add("vs the baseline (vendor/library)", bb)
	}
	one, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.6}, {X: 1, Y: float64(n) - 0.4}})
	one.Color, one.Dashes, one.Width = color.Black, []vg.Length{vg.Points(3), vg.Points(2)}, vg.Points(1)
	p.Add(one)
	p.NominalY(labels...)
	p.Legend.Top = true
	p.Legend.Left = false
	h := vg.Length(n)*barW*2.6 + 3*vg.Centimeter
	return savePlots(path, 18*vg.Centimeter, h, [][]*plot.Plot{{p}})
}

// sortedPlot: the median of every measured candidate, fastest first, with
// the recorded winner, default and baseline times as lines.
func sortedPlot(path string, r *Row, cands []trace.Record) error {
	var ts []float64
	for _, c := range cands {
		if c.Err == "" && c.MedianUS > 0 {
			ts = append(ts, c.MedianUS)
		}
	}
	sort.Float64s(ts)
	noun := "candidates"
	if len(ts) == 1 {
		noun = "candidate"
	}
	p := newPlot(fmt.Sprintf("%s %s: %d measured %s, sorted", r.Kernel, r.Key, len(ts), noun))
	p.X.Label.Text = "candidate rank (fastest first)"
	pts := make(plotter.XYs, len(ts))
	lo, hi := math.Inf(1), 0.0
	legend := 0 // entries of the legend
	for i, t := range ts {
		pts[i] = plotter.XY{X: float64(i + 1), Y: t}
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	if len(ts) > 0 {
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = colWinner, vg.Points(1.8), draw.CircleGlyph{}
		p.Add(s)
		p.Legend.Add("candidate (search median)", s)
		legend++
	}
	xmax := float64(len(ts)) + 0.5
	p.X.Min, p.X.Max = 0.5, xmax
	p.X.Tick.Marker = rankTicks{}
	hline := func(y float64, c color.Color, name string, dash bool) {
		if y <= 0 {
			return
		}
		l, _ := plotter.NewLine(plotter.XYs{{X: 0.5, Y: y}, {X: xmax, Y: y}})
		l.Color, l.Width = c, vg.Points(1.2)
		if dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		legend++
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	hline(r.MedianUS, colWinner, fmt.Sprintf("winner, final timing %s", FormatUS(r.MedianUS)), false)
	hline(r.DefaultUS, colDefault, fmt.Sprintf("default %s", FormatUS(r.DefaultUS)), true)
	hline(r.BaselineUS, colBaseline, fmt.Sprintf("%s %s", r.Baseline, FormatUS(r.BaselineUS)), true)
	const h = 10 * vg.Centimeter
	if lo <= hi {
		timeAxis(p, lo, hi, legendHeadroom(legend, h))
	}
	p.Legend.Top, p.Legend.Left = true, true
	return savePlots(path, 16*vg.Centimeter, h, [][]*plot.Plot{{p}})
}

// paramPlot: for each parameter, every candidate's time at each value
// (grey) and the best per value (blue line), one small plot per parameter.
// It reports false when no parameter takes more than one value.
func paramPlot(path string, r *Row, cands []trace.Record) (bool, error) {
	names := map[string]bool{}
	for _, c := range cands {
		for k := range c.Params {
			names[k] = true
		}
	}
	var plots []*plot.Plot
	for _, name := range sortedKeys(names) {
		vals := map[int]bool{}
		for _, c := range cands {
			if v, ok := c.Params[name]; ok && c.Err == "" && c.MedianUS > 0 {
				vals[v] = true
			}
		}
		if len(vals) < 2 {
			continue
		}
		var vs []int
		for v := range vals {
			vs = append(vs, v)
		}
		sort.Ints(vs)
		idx := map[int]int{}
		labels := make([]string, len(vs))
		for i, v := range vs {
			idx[v], labels[i] = i, fmt.Sprint(v)
		}
		best := make([]float64, len(vs))
		var all plotter.XYs
		lo, hi := math.Inf(1), 0.0
		for _, c := range cands {
			v, ok := c.Params[name]
			if !ok || c.Err != "" || c.MedianUS <= 0 {
				continue
			}
			i := idx[v]
			// A small deterministic spread keeps equal values apart.
			jit := (float64(len(all)%7) - 3) * 0.04
			all = append(all, plotter.XY{X: float64(i) + jit, Y: c.MedianUS})
			if best[i] == 0 || c.MedianUS < best[i] {
				best[i] = c.MedianUS
			}
			lo, hi = math.Min(lo, c.MedianUS), math.Max(hi, c.MedianUS)
		}
		p := newPlot(name)
		s, err := plotter.NewScatter(all)
		if err != nil {
			return false, err
		}
		s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = colAll, vg.Points(1.6), draw.CircleGlyph{}
		p.Add(s)
		bl := make(plotter.XYs, len(vs))
		for i := range vs {
			bl[i] = plotter.XY{X: float64(i), Y: best[i]}
		}
		line, pts, err := plotter.NewLinePoints(bl)
		if err != nil {
			return false, err
		}
		line.Color, line.Width = colWinner, vg.Points(1.5)
		pts.Color, pts.Shape, pts.Radius = colWinner, draw.CircleGlyph{}, vg.Points(2.5)
		p.Add(line, pts)
		if len(plots) == 0 {
			p.Legend.Add("best at this value", line, pts)
			p.Legend.Add("every candidate", s)
			p.Legend.Top = true
		}
		p.NominalX(labels...)
		// The same headroom on every plot of the grid, so their scales match.
		timeAxis(p, lo, hi, legendHeadroom(2, paramPlotH))
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return false, nil
	}
	const cols = 3
	var grid [][]*plot.Plot
	for i := 0; i < len(plots); i += cols {
		grid = append(grid, plots[i:min(i+cols, len(plots))])
	}
	w := 8 * vg.Centimeter * vg.Length(min(cols, len(plots)))
	h := paramPlotH * vg.Length(len(grid))
	return true, savePlots(path, w, h, grid)
}

// paramPlotH is the height of one plot of the parameter grid.
const paramPlotH = 6.5 * vg.Centimeter

// legendHeadroom is the share of the data range to add above the data so
// that a legend of n entries at the top of a plot of height h covers none
// of it: each entry takes about 12 points, and the title and the x axis
// about 70.
func legendHeadroom(n int, h vg.Length) float64 {
	need := float64(n)*12 + 8
	area := math.Max(h.Points()-70, 2*need)
	f := need / area
	return f / (1 - f)
}

// timeAxis sets the y axis of a plot of times in µs from lo to hi: the
// unit that suits them (µs, ms or s, named in the axis label), compact
// tick labels ("47.5", not "47500.00"), a log scale when they span more
// than a factor of 8, and headroom (a share of the range) on top for the
// legend.
func timeAxis(p *plot.Plot, lo, hi, headroom float64) {
	unit, scale := "µs", 1.0
	switch {
	case hi >= 1e6:
		unit, scale = "s", 1e6
	case hi >= 1e3:
		unit, scale = "ms", 1e3
	}
	p.Y.Label.Text = "median time (" + unit + ")"
	if lo > 0 && hi/lo > 8 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = scaledTicks{inner: plot.LogTicks{Prec: -1}, scale: scale}
		top := math.Log(hi * 1.2)
		p.Y.Min, p.Y.Max = lo/1.2, math.Exp(top+(top-math.Log(lo/1.2))*headroom)
		return
	}
	p.Y.Tick.Marker = scaledTicks{inner: plot.DefaultTicks{}, scale: scale}
	pad := math.Max(hi-lo, hi*0.02)
	p.Y.Min, p.Y.Max = math.Max(0, lo-pad*0.05), hi+pad*(0.05+headroom)
}

// scaledTicks labels the ticks of inner in a unit scale times the data's,
// with at most four significant digits and no trailing zeros.
type scaledTicks struct {
	inner plot.Ticker
	scale float64
}

func (t scaledTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := t.inner.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = compactNumber(ts[i].Value / t.scale)
		}
	}
	return ts
}

// compactNumber writes v with at most four significant digits and no
// trailing zeros: 47.5, 250, 0.125, 1.235e+06 only beyond 10⁶.
func compactNumber(v float64) string {
	if v == 0 {
		return "0"
	}
	if a := math.Abs(v); a >= 1e6 || a < 1e-3 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// rankTicks labels candidate ranks with whole numbers only.
type rankTicks struct{}

func (rankTicks) Ticks(lo, hi float64) []plot.Tick {
	n := hi - lo
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000} {
		step = s
		if n/s <= 10 {
			break
		}
	}
	var ts []plot.Tick
	for x := math.Max(step, math.Ceil(lo/step)*step); x <= hi; x += step {
		ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', 0, 64)})
	}
	if len(ts) == 0 || ts[0].Value > 1 {
		ts = append([]plot.Tick{{Value: 1, Label: "1"}}, ts...)
	}
	return ts
}

// FormatUS shows a time in µs in the unit that suits it (µs, ms or s).
func FormatUS(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3g s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.4g ms", us/1e3)
	}
	return fmt.Sprintf("%.4g µs", us)
}
