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

// linesIn reports whether a line of the panel has a point in the box
// [xmin, xmax, ymin, ymax], in the axes' coordinates.
func (pn Panel) linesIn(box [4]float64) bool {
	for _, s := range pn.Series {
		for i, x := range s.X {
			if pn.LogX {
				if x <= 0 {
					continue
				}
				x = math.Log10(x)
			}
			if x >= box[0] && x <= box[1] && s.Y[i] >= box[2] && s.Y[i] <= box[3] {
				return true
			}
		}
	}
	return false
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
