package metrics

import (
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// makeRoomForLegend places the legend of a panel drawn as p, which has
// entries legend entries, so that no line or bar runs under it (a gonum
// legend has no background, and training curves cross every corner of a
// panel), and reports whether it has to go beside the panel. It goes at
// the top right, the y axis raised to make room above the data; with
// YMax, only up to YMax, and past that at the bottom right, the axis
// ending at YMax, when no line passes there.
func (pn Panel) makeRoomForLegend(p *plot.Plot, entries int) (outside bool) {
	if entries == 0 || p.Y.Max <= p.Y.Min {
		return false
	}
	// The share of the panel's data area the legend's rows take, the
	// margins of title and axes left out.
	dataHeight := panelHeight - 2.5*vg.Centimeter
	share := min(0.6, float64(vg.Length(entries+1)*p.Legend.TextStyle.Height("M")/dataHeight))
	raised := p.Y.Max + (p.Y.Max-p.Y.Min)*share/(1-share)
	if pn.YMax == nil || raised <= *pn.YMax {
		p.Legend.Top = true
		p.Y.Max = raised
		return false
	}
	p.Y.Max = max(p.Y.Max, *pn.YMax)
	if pn.Bars {
		return true
	}
	dataWidth := panelWidth - 2*vg.Centimeter
	width := min(1, 1.1*float64(p.Legend.Rectangle(draw.Canvas{}).Size().X/dataWidth))
	box := [4]float64{p.X.Max - (p.X.Max-p.X.Min)*width, p.X.Max, p.Y.Min, p.Y.Min + (p.Y.Max-p.Y.Min)*share}
	return pn.linesIn(box)
}

// linesIn reports whether a line of the panel passes through the box
// [xmin, xmax, ymin, ymax], in the axes' coordinates: a point in it, or
// a segment between two of its points that crosses it (a line drawn
// through a few far-apart points has none in the box it crosses). On a
// log x axis the points it cannot show are left out, as the line joins
// the ones around them.
func (pn Panel) linesIn(box [4]float64) bool {
	for _, s := range pn.Series {
		var x0, y0 float64
		first := true
		for i, x := range s.X {
			if pn.LogX {
				if x <= 0 {
					continue
				}
				x = math.Log10(x)
			}
			if first {
				x0, y0 = x, s.Y[i]
				first = false
			}
			if segmentMeetsBox(x0, y0, x, s.Y[i], box) {
				return true
			}
			x0, y0 = x, s.Y[i]
		}
	}
	return false
}

// segmentMeetsBox reports whether the segment from (x0, y0) to (x1, y1),
// a point where the two are equal, has a point in the closed box [xmin,
// xmax, ymin, ymax] (Liang and Barsky's clipping: the segment's part
// within each of the box's four half-planes is an interval of its
// parameter t in [0, 1], and it meets the box where all four overlap).
func segmentMeetsBox(x0, y0, x1, y1 float64, box [4]float64) bool {
	dx, dy := x1-x0, y1-y0
	lo, hi := 0.0, 1.0
	// Each half-plane as p·t ≤ q.
	for _, e := range [4][2]float64{{-dx, x0 - box[0]}, {dx, box[1] - x0}, {-dy, y0 - box[2]}, {dy, box[3] - y0}} {
		p, q := e[0], e[1]
		switch {
		case p == 0: // parallel to this edge: all in or all out
			if q < 0 {
				return false
			}
		case p < 0:
			lo = max(lo, q/p)
		default:
			hi = min(hi, q/p)
		}
		if lo > hi {
			return false
		}
	}
	return true
}

// plainTicks are gonum's default ticks without the zeros it writes after
// the point of every label when its step is 2.5 units ("0.00, 25.00,
// 50.00"): as many trailing zeros as all the labels share go, with a point
// left bare.
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	trim := -1
	for _, t := range ticks {
		if t.Label == "" {
			continue
		}
		dot := strings.IndexByte(t.Label, '.')
		if dot < 0 || strings.ContainsAny(t.Label, "eE") {
			return ticks
		}
		zeros := len(t.Label) - len(strings.TrimRight(t.Label, "0"))
		if trim < 0 || zeros < trim {
			trim = zeros
		}
	}
	if trim <= 0 {
		return ticks
	}
	for i, t := range ticks {
		if t.Label != "" {
			l := t.Label[:len(t.Label)-trim]
			ticks[i].Label = strings.TrimSuffix(l, ".")
		}
	}
	return ticks
}
