package metrics

import (
	"math"
	"testing"
)

// A line passes through a box where one of its points lies in it, and
// also where only the segment between two points crosses it.
func TestLinesInSeesSegmentsThatCrossTheBox(t *testing.T) {
	box := [4]float64{8, 10, 0, 0.2}
	for _, tc := range []struct {
		name string
		x, y []float64
		logX bool
		want bool
	}{
		{"a point inside", []float64{1, 9}, []float64{0.9, 0.1}, false, true},
		{"a point on the edge", []float64{10}, []float64{0.2}, false, true},
		{"a single point outside", []float64{9}, []float64{0.5}, false, false},
		{"a segment across, ends left and right", []float64{7, 11}, []float64{0.1, 0.1}, false, true},
		{"a segment down through the top", []float64{9, 9.5}, []float64{0.9, -0.5}, false, true},
		{"a segment across a corner", []float64{7, 9}, []float64{0.35, -0.1}, false, true},
		{"a segment past the corner", []float64{7, 8.5}, []float64{0.1, 0.5}, false, false},
		{"a segment along the top's line, left of the box", []float64{1, 7.9}, []float64{0.2, 0.2}, false, false},
		{"a segment above", []float64{1, 20}, []float64{0.3, 0.25}, false, false},
		{"segments around the box", []float64{7, 9, 11}, []float64{0.1, 0.4, 0.1}, false, false},
		// On a log axis the box is in log10(x): the line from x=1e7 to
		// x=1e11 crosses it; the point at x=0, not drawn, does not cut it.
		{"log x: a segment across", []float64{1e7, 0, 1e11}, []float64{0.1, 5, 0.1}, true, true},
		{"log x: the points not drawn", []float64{-9, 0, 1e7}, []float64{0.1, 0.1, 0.5}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pn := Panel{LogX: tc.logX, Series: []Series{{X: tc.x, Y: tc.y}}}
			if got := pn.linesIn(box); got != tc.want {
				t.Errorf("line through %v, %v: in the box %v: %v, want %v", tc.x, tc.y, box, got, tc.want)
			}
		})
	}
}

// The legend at the bottom right is not drawn over a line that crosses
// that corner between two points outside it: here a curve that drops from
// the top of the panel to below its axis within the last tenth of it.
func TestLegendAvoidsASegmentThroughTheCorner(t *testing.T) {
	zero, one := 0.0, 1.0
	rising := Series{Name: "train"}
	for i := range 100 {
		rising.X = append(rising.X, float64(i+1))
		rising.Y = append(rising.Y, 1-0.9*math.Exp(-float64(i)/10))
	}
	for _, tc := range []struct {
		name    string
		drop    Series
		outside bool
	}{
		{"nothing in the corner", Series{Name: "val", X: []float64{1, 90}, Y: []float64{0.5, 0.95}}, false},
		{"a segment through the corner", Series{Name: "val", X: []float64{1, 90, 100}, Y: []float64{0.5, 0.95, -0.5}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pn := Panel{YMin: &zero, YMax: &one, Series: []Series{rising, tc.drop}}
			p, outside, err := pn.layout()
			if err != nil {
				t.Fatal(err)
			}
			if p.Legend.Top {
				t.Fatal("the legend is at the top: the axis is to end at 1, with no room above the data")
			}
			if outside != tc.outside {
				t.Errorf("legend beside the panel: %v, want %v", outside, tc.outside)
			}
		})
	}
}
