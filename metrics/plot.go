package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
}

// Panel is one chart of an image.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Bars draws each series as bars, one per point, labelled with its X
	// values, the series side by side: for per-worker figures, whose X is
	// a worker rather than a quantity on an axis.
	Bars bool
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
// whole or not at all.
func PlotPanels(panels []Panel, path string) error {
	if len(panels) == 0 {
		return errors.New("metrics: nothing to plot")
	}
	cols := min(len(panels), maxColumns)
	rows := (len(panels) + cols - 1) / cols
	img, err := newImage(path, vg.Length(cols)*panelWidth, vg.Length(rows)*panelHeight)
	if err != nil {
		return err
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p, err := pn.plot()
		if err != nil {
			return fmt.Errorf("metrics: panel %q: %w", pn.Title, err)
		}
		grid[i/cols][i%cols] = p
	}
	pad := 3 * vg.Millimeter
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: pad, PadY: pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(grid, tiles, draw.New(img))
	for r, row := range grid {
		for c, p := range row {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := img.WriteTo(&buf); err != nil {
		return fmt.Errorf("metrics: %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
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

func (pn Panel) plot() (*plot.Plot, error) {
	if len(pn.Series) == 0 {
		return nil, errors.New("no series")
	}
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text = pn.XLabel
	p.Y.Label.Text = pn.YLabel
	p.Add(plotter.NewGrid())
	var err error
	if pn.Bars {
		err = pn.addBars(p)
	} else {
		err = pn.addLines(p)
	}
	if err != nil {
		return nil, err
	}
	makeRoomForLegend(p, pn.legendEntries())
	return p, nil
}

// makeRoomForLegend puts the legend at the top right and raises the y
// axis so that no line or bar runs under it: a gonum legend has no
// background, and training curves cross every corner of a panel.
func makeRoomForLegend(p *plot.Plot, entries int) {
	if entries == 0 || p.Y.Max <= p.Y.Min {
		return
	}
	p.Legend.Top = true
	// The share of the panel's data area the legend's rows take, the
	// margins of title and axes left out.
	dataHeight := panelHeight - 2.5*vg.Centimeter
	share := min(0.6, float64(vg.Length(entries+1)*p.Legend.TextStyle.Height("M")/dataHeight))
	p.Y.Max += (p.Y.Max - p.Y.Min) * share / (1 - share)
}

func (pn Panel) addLines(p *plot.Plot) error {
	for _, s := range pn.Series {
		xys, err := s.points()
		if err != nil {
			return err
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("series %q: %w", s.Name, err)
		}
		line.Color = plotutil.Color(s.Color)
		line.Dashes = plotutil.Dashes(s.Dash)
		line.Width = vg.Points(1.5)
		p.Add(line)
		if s.Name != "" {
			p.Legend.Add(s.Name, line)
		}
	}
	return nil
}

func (pn Panel) addBars(p *plot.Plot) error {
	var labels []string
	for _, s := range pn.Series {
		if _, err := s.points(); err != nil {
			return err
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
	for j, s := range pn.Series {
		bars, err := plotter.NewBarChart(plotter.Values(s.Y), width)
		if err != nil {
			return fmt.Errorf("series %q: %w", s.Name, err)
		}
		bars.Color = plotutil.Color(s.Color)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(j)-float64(len(pn.Series)-1)/2) * width
		p.Add(bars)
		if s.Name != "" {
			p.Legend.Add(s.Name, bars)
		}
	}
	p.NominalX(labels...)
	return nil
}

func (pn Panel) legendEntries() int {
	n := 0
	for _, s := range pn.Series {
		if s.Name != "" {
			n++
		}
	}
	return n
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
