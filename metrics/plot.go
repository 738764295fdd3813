package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one line of a panel, or one set of bars.
type Series struct {
	Name string // legend entry; empty for none
	X, Y []float64
	// Color and Dash pick the colour and dash pattern by index from fixed
	// palettes. Series that belong together (one run, or one quantity
	// across runs) share an index, so the eye can follow them across
	// panels.
	Color, Dash int
	// Width is the line's width in points, zero for the default 1.5: a
	// wider line picks out the series that matter among many. Bars ignore
	// it.
	Width float64
}

// Panel is one chart of an image.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Bars draws each series as bars, one per point, labelled with its X
	// values, the series side by side: for per-worker figures, whose X is
	// a worker rather than a quantity on an axis.
	Bars bool
	// LogX puts the x axis on a log scale, for quantities that span
	// orders of magnitude (bytes sent). Points with x ≤ 0, which it cannot
	// show, are left out, and so is a series with no other points. Not for
	// bars.
	LogX bool
	// YMin, when set, is where the y axis starts, so that curves that rise
	// steeply and then level off show their level part at full height;
	// lines below it are cut at the axis. Nil fits the axis to the data.
	YMin *float64
	// YMax, when set, is the most the y axis may show, 1 for a fraction
	// such as accuracy: room for the legend is made above the data only
	// up to it, and when that is not enough the legend goes to the bottom
	// right, if no line passes there, or beside the panel.
	YMax *float64
	// LegendOutside draws the legend to the right of the chart instead of
	// over it, for panels of many series: the image widens to hold it, and
	// grows taller if the legend is taller than a panel.
	LegendOutside bool
}

// The size of one panel, and how many stand in a row before the next row
// starts: three fit a screen or a page side by side.
const (
	panelWidth  = 12 * vg.Centimeter
	panelHeight = 8.5 * vg.Centimeter
	maxColumns  = 3
)

// PlotPanels draws the panels tiled in one image, up to three a row, and
// writes it to path as PNG or SVG, by the extension. The file is written
// whole or not at all. Every panel gets a tile of the same size, widened
// and made taller as the largest legend drawn outside a panel needs.
func PlotPanels(panels []Panel, path string) error {
	if len(panels) == 0 {
		return errors.New("metrics: nothing to plot")
	}
	cols := min(len(panels), maxColumns)
	rows := (len(panels) + cols - 1) / cols
	pad := 3 * vg.Millimeter
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	outside := make([]*plot.Legend, len(panels)) // legends drawn beside their panel
	tileWidth, tileHeight := panelWidth, panelHeight
	for i, pn := range panels {
		p, legendOutside, err := pn.layout()
		if err != nil {
			return fmt.Errorf("metrics: panel %q: %w", pn.Title, err)
		}
		grid[i/cols][i%cols] = p
		if size := p.Legend.Rectangle(draw.Canvas{}).Size(); legendOutside && size.X > 0 {
			l := p.Legend
			l.Top, l.Left = true, true
			p.Legend = plot.NewLegend()
			outside[i] = &l
			tileWidth = max(tileWidth, panelWidth+legendGap+size.X)
			tileHeight = max(tileHeight, titleHeight(p)+size.Y+3*pad)
		}
	}
	img, err := newImage(path, vg.Length(cols)*tileWidth, vg.Length(rows)*tileHeight)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: pad, PadY: pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(grid, tiles, draw.New(img))
	for r, row := range grid {
		for c, p := range row {
			if p == nil {
				continue
			}
			tile := canvases[r][c]
			if l := outside[r*cols+c]; l != nil {
				tile = drawLegendBeside(p, l, tile)
			}
			p.Draw(tile)
		}
	}
	var buf bytes.Buffer
	if _, err := img.WriteTo(&buf); err != nil {
		return fmt.Errorf("metrics: %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// legendGap separates a legend drawn outside a panel from the panel.
const legendGap = 4 * vg.Millimeter

// drawLegendBeside draws l at the right of tile, its top level with the
// top of p's data area, and returns the rest of the tile, for p.
func drawLegendBeside(p *plot.Plot, l *plot.Legend, tile draw.Canvas) draw.Canvas {
	width := l.Rectangle(tile).Size().X
	chart := draw.Crop(tile, 0, -(width + legendGap), 0, 0)
	strip := tile
	strip.Min.X = chart.Max.X + legendGap
	strip.Max.Y = p.DataCanvas(chart).Max.Y
	l.Draw(strip)
	return chart
}

// titleHeight is the height p's title takes above its data area.
func titleHeight(p *plot.Plot) vg.Length {
	if p.Title.Text == "" {
		return 0
	}
	return p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
}

// newImage returns a canvas of the kind path's extension names.
func newImage(path string, w, h vg.Length) (vg.CanvasWriterTo, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		return vgimg.PngCanvas{Canvas: vgimg.New(w, h)}, nil
	case ".svg":
		return vgsvg.New(w, h), nil
	}
	return nil, fmt.Errorf("metrics: %s: want a .png or .svg file name, to choose the image format", path)
}

// layout draws the panel and says whether its legend goes beside it.
func (pn Panel) layout() (*plot.Plot, bool, error) {
	p, entries, err := pn.draw()
	if err != nil {
		return nil, false, err
	}
	if pn.LegendOutside {
		return p, true, nil
	}
	return p, pn.makeRoomForLegend(p, entries), nil
}

// draw draws the panel's series and returns the plot and the number of
// its legend entries.
func (pn Panel) draw() (*plot.Plot, int, error) {
	if len(pn.Series) == 0 {
		return nil, 0, errors.New("no series")
	}
	if pn.Bars && pn.LogX {
		return nil, 0, errors.New("bars on a log x axis")
	}
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text = pn.XLabel
	p.Y.Label.Text = pn.YLabel
	if pn.LogX {
		// The lines are drawn at log10(x) on a linear axis, rather than
		// on gonum's plot.LogScale: that places the box of a centred axis
		// label at the arithmetic middle of the range, near the right end
		// on a log scale, and shrinks the chart to make room for it.
		p.X.Tick.Marker = powersOfTen{}
	} else {
		p.X.Tick.Marker = plainTicks{}
	}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	var entries int
	var err error
	if pn.Bars {
		entries, err = pn.addBars(p)
	} else {
		entries, err = pn.addLines(p)
	}
	if err != nil {
		return nil, 0, err
	}
	if pn.YMin != nil {
		if *pn.YMin >= p.Y.Max {
			return nil, 0, fmt.Errorf("the y axis's minimum %g is not below the data's maximum %g", *pn.YMin, p.Y.Max)
		}
		p.Y.Min = *pn.YMin
	}
	return p, entries, nil
}

// addLines draws pn's series as lines and returns the number of legend
// entries it made.
func (pn Panel) addLines(p *plot.Plot) (int, error) {
	entries, lines := 0, 0
	for _, s := range pn.Series {
		xys, err := s.points()
		if err != nil {
			return 0, err
		}
		if pn.LogX {
			xys = slices.DeleteFunc(xys, func(q plotter.XY) bool { return q.X <= 0 })
			if len(xys) == 0 {
				continue
			}
			for i := range xys {
				xys[i].X = math.Log10(xys[i].X)
			}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return 0, fmt.Errorf("series %q: %w", s.Name, err)
		}
		line.LineStyle = s.lineStyle()
		p.Add(line)
		lines++
		if s.Name != "" {
			p.Legend.Add(s.Name, line)
			entries++
		}
	}
	if lines == 0 {
		return 0, errors.New("no point with x > 0 to draw on a log axis")
	}
	return entries, nil
}

// addBars draws pn's series as bars and returns the number of legend
// entries it made.
func (pn Panel) addBars(p *plot.Plot) (int, error) {
	var labels []string
	for _, s := range pn.Series {
		if _, err := s.points(); err != nil {
			return 0, err
		}
		if len(s.X) > len(labels) {
			labels = labels[:0]
			for _, x := range s.X {
				labels = append(labels, strconv.FormatFloat(x, 'g', -1, 64))
			}
		}
	}
	// Every group of bars (one per label) and a gap of one bar share the
	// panel's width.
	width := vg.Points(min(24, 240/float64(len(labels)*(len(pn.Series)+1))))
	entries := 0
	for j, s := range pn.Series {
		bars, err := plotter.NewBarChart(plotter.Values(s.Y), width)
		if err != nil {
			return 0, fmt.Errorf("series %q: %w", s.Name, err)
		}
		bars.Color = plotutil.Color(s.Color)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(j)-float64(len(pn.Series)-1)/2) * width
		p.Add(bars)
		if s.Name != "" {
			p.Legend.Add(s.Name, bars)
			entries++
		}
	}
	p.NominalX(labels...)
	return entries, nil
}

// powersOfTen marks an axis of log10 values as a log axis: a tick labelled
// with the value at each power of ten, unlabelled ones at its multiples.
type powersOfTen struct{}

func (powersOfTen) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Floor(min); k <= max; k++ {
		ticks = append(ticks, plot.Tick{Value: k, Label: strconv.FormatFloat(math.Pow(10, k), 'g', -1, 64)})
		for m := 2; m < 10; m++ {
			ticks = append(ticks, plot.Tick{Value: k + math.Log10(float64(m))})
		}
	}
	return ticks
}

// lineStyle is how s is drawn as a line.
func (s Series) lineStyle() draw.LineStyle {
	width := 1.5
	if s.Width > 0 {
		width = s.Width
	}
	return draw.LineStyle{Color: plotutil.Color(s.Color), Dashes: plotutil.Dashes(s.Dash), Width: vg.Points(width)}
}

func (s Series) points() (plotter.XYs, error) {
	if len(s.X) != len(s.Y) {
		return nil, fmt.Errorf("series %q has %d x values and %d y values", s.Name, len(s.X), len(s.Y))
	}
	if len(s.X) == 0 {
		return nil, fmt.Errorf("series %q has no points", s.Name)
	}
	xys := make(plotter.XYs, len(s.X))
	for i := range xys {
		xys[i] = plotter.XY{X: s.X[i], Y: s.Y[i]}
	}
	return xys, nil
}
