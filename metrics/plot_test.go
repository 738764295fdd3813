package metrics

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	_ "image/png" // image.Decode reads the PNG files the tests write
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// epochsWith makes n epochs of a run that learns, with the optional
// figures set by the caller.
func epochsWith(n int, fill func(e *Epoch)) []Epoch {
	out := make([]Epoch, n)
	for i := range out {
		e := &out[i]
		e.Epoch = i + 1
		e.Loss = 2 / float64(i+1)
		e.ValLoss = 2.2 / float64(i+1)
		e.TrainAcc = 1 - 0.5/float64(i+1)
		e.ValAcc = 0.9 - 0.5/float64(i+1)
		e.TestAcc = 0.85 - 0.5/float64(i+1)
		e.Ratio = 1
		if fill != nil {
			fill(e)
		}
	}
	return out
}

func withBytes(e *Epoch)    { e.BytesFwd, e.BytesBwd, e.BytesGrad = 2e6, 2e6, 1e6 }
func withEmulated(e *Epoch) { e.EmulatedSeconds, e.EmulatedCommSeconds = 0.5, 0.3 }

// withoutLink is a run on no emulated link: its emulated time is its
// compute time.
func withoutLink(e *Epoch) { e.ComputeSeconds, e.EmulatedSeconds = 0.2, 0.2 }
func withWorkers(k int) func(*Epoch) {
	return func(e *Epoch) {
		e.WorkerCompute = make([]float64, k)
		for i := range e.WorkerCompute {
			e.WorkerCompute[i] = 0.1 * float64(i+1)
		}
	}
}

func titles(panels []Panel) []string { return names(panels, func(p Panel) string { return p.Title }) }

// A panel is drawn only when some run carries its data.
func TestEpochPanels(t *testing.T) {
	all := func(e *Epoch) { withBytes(e); withEmulated(e); withWorkers(4)(e) }
	tests := []struct {
		name string
		runs []Run
		want []string
	}{
		{"no runs", nil, nil},
		{"a run without epochs", []Run{{Name: "empty"}}, nil},
		{"one worker", []Run{{Epochs: epochsWith(5, withWorkers(1))}}, []string{titleLoss, titleAccuracy}},
		{"bytes", []Run{{Epochs: epochsWith(5, withBytes)}}, []string{titleLoss, titleAccuracy, titleAccuracyBytes}},
		{"emulated link", []Run{{Epochs: epochsWith(5, withEmulated)}}, []string{titleLoss, titleAccuracy, titleAccuracyTime}},
		{"no link", []Run{{Epochs: epochsWith(5, withoutLink)}}, []string{titleLoss, titleAccuracy}},
		{"two workers", []Run{{Epochs: epochsWith(5, withWorkers(2))}}, []string{titleLoss, titleAccuracy, titleWorkers}},
		{"everything", []Run{{Epochs: epochsWith(5, all)}},
			[]string{titleLoss, titleAccuracy, titleAccuracyBytes, titleAccuracyTime, titleWorkers}},
		{"one of two runs has bytes", []Run{{Name: "a", Epochs: epochsWith(3, nil)}, {Name: "b", Epochs: epochsWith(3, withBytes)}},
			[]string{titleLoss, titleAccuracy, titleAccuracyBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := titles(EpochPanels(tt.runs)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("panels %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEpochPanelsSeries(t *testing.T) {
	runs := []Run{
		{Name: "plain", Epochs: epochsWith(3, nil)},
		{Name: "topk", Epochs: epochsWith(3, func(e *Epoch) { withBytes(e); withWorkers(2)(e) })},
	}
	panels := map[string]Panel{}
	for _, p := range EpochPanels(runs) {
		panels[p.Title] = p
	}
	acc := panels[titleAccuracy]
	if len(acc.Series) != 6 || acc.Series[0].Name != "plain train" || acc.Series[5].Name != "topk test" {
		t.Errorf("accuracy series %q, want train, val and test of each run, named by run", seriesNames(acc.Series))
	}
	// Several runs: a colour per run, a dash pattern per quantity.
	if s := acc.Series[4]; s.Color != 1 || s.Dash != 1 {
		t.Errorf("topk val has colour %d, dash %d; want 1, 1", s.Color, s.Dash)
	}
	comm := panels[titleAccuracyBytes]
	if len(comm.Series) != 3 || !reflect.DeepEqual(comm.Series[1].X, []float64{5, 10, 15}) {
		t.Errorf("accuracy against bytes: %d series, x %v; want topk's 3, at 5, 10, 15 MB", len(comm.Series), comm.Series[1].X)
	}
	workers := panels[titleWorkers]
	if len(workers.Series) != 1 || !workers.Bars {
		t.Fatalf("worker panel %+v, want one bar series", workers)
	}
	w := workers.Series[0]
	if !reflect.DeepEqual(w.X, []float64{0, 1}) || math.Abs(w.Y[0]-0.3) > 1e-12 || math.Abs(w.Y[1]-0.6) > 1e-12 ||
		w.Name != "topk max/mean 1.33" {
		t.Errorf("worker bars %+v, want 0.3 and 0.6 s named \"topk max/mean 1.33\"", w)
	}
	// One run: coloured by quantity, named by quantity alone.
	one := EpochPanels(runs[:1])[1]
	if got := seriesNames(one.Series); !reflect.DeepEqual(got, []string{"train", "val", "test"}) || one.Series[2].Color != 2 {
		t.Errorf("one run's accuracy series %q", got)
	}
}

func seriesNames(ss []Series) []string { return names(ss, func(s Series) string { return s.Name }) }

func TestPlotWritesImages(t *testing.T) {
	everything := epochsWith(20, func(e *Epoch) { withBytes(e); withEmulated(e); withWorkers(4)(e) })
	tests := []struct {
		name   string
		epochs []Epoch
		check  func(t *testing.T, data []byte)
	}{
		{"curves.png", everything, checkPNG},
		{"curves.svg", everything, checkSVG},
		{"CURVES.PNG", epochsWith(3, nil), checkPNG},
		{"one-epoch.svg", epochsWith(1, nil), checkSVG},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name)
			if err := Plot(tt.epochs, path); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, data)
		})
	}
}

func checkPNG(t *testing.T, data []byte) {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a readable image: %v", err)
	}
	if b := img.Bounds(); format != "png" || b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s image of %v, want a PNG of at least 100×100", format, b)
	}
}

func checkSVG(t *testing.T, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	first := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok && first == "" {
			first = el.Name.Local
		}
	}
	if first != "svg" {
		t.Errorf("the document element is <%s>, want <svg>", first)
	}
}

// Bad input is an error, and no file is left behind.
func TestPlotErrors(t *testing.T) {
	line := func(x, y []float64) []Panel {
		return []Panel{{Title: "t", Series: []Series{{Name: "s", X: x, Y: y}}}}
	}
	tests := []struct {
		name    string
		file    string
		panels  []Panel
		wantErr string
	}{
		{"no panels", "x.png", nil, "nothing to plot"},
		{"unknown extension", "x.gif", line([]float64{1}, []float64{1}), "want a .png or .svg file name"},
		{"no extension", "curves", line([]float64{1}, []float64{1}), "want a .png or .svg file name"},
		{"panel without series", "x.svg", []Panel{{Title: "empty"}}, `panel "empty": no series`},
		{"lengths differ", "x.svg", line([]float64{1, 2}, []float64{1}), "2 x values and 1 y values"},
		{"no points", "x.svg", line(nil, nil), "has no points"},
		{"NaN", "x.png", line([]float64{1, 2}, []float64{1, math.NaN()}), "NaN"},
		{"infinite bar", "x.png", []Panel{{Title: "b", Bars: true, Series: []Series{{X: []float64{0}, Y: []float64{math.Inf(1)}}}}}, "infinite"},
		{"missing directory", "no/such/dir/x.png", line([]float64{1}, []float64{1}), "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			errorAsWanted(t, PlotPanels(tt.panels, filepath.Join(dir, tt.file)), tt.wantErr)
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a failed plot left %v", left)
			}
		})
	}
	errorAsWanted(t, Plot(nil, filepath.Join(t.TempDir(), "x.png")), "no epochs")
}

// A log x axis leaves out the points it cannot show, and a series with
// nothing else, rather than failing.
func TestPlotLogX(t *testing.T) {
	kept := Series{Name: "kept", X: []float64{0, 1, 10, 100}, Y: []float64{0, 1, 2, 3}}
	gone := Series{Name: "gone", X: []float64{-1, 0}, Y: []float64{1, 2}}
	p, err := Panel{Title: "log", LogX: true, Series: []Series{kept, gone}}.plot()
	if err != nil {
		t.Fatal(err)
	}
	// The axis holds log10 x, labelled with x at the powers of ten.
	if p.X.Min != 0 || p.X.Max != 2 {
		t.Errorf("x axis from log10 x = %g to %g, want 0 to 2: the point at 0 left out", p.X.Min, p.X.Max)
	}
	var labels []string
	for _, tick := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tick.Label != "" {
			labels = append(labels, tick.Label)
		}
	}
	if want := []string{"1", "10", "100"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("x axis labels %q, want %q", labels, want)
	}
	alone, err := Panel{Title: "log", LogX: true, Series: []Series{kept}}.plot()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Legend.Rectangle(draw.Canvas{}).Size(), alone.Legend.Rectangle(draw.Canvas{}).Size(); got != want {
		t.Errorf("legend of %v, want %v: one entry, the series with no positive x left out", got, want)
	}
	path := filepath.Join(t.TempDir(), "log.svg")
	if err := PlotPanels([]Panel{{Title: "log", LogX: true, Series: []Series{kept, gone}}}, path); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		panel   Panel
		wantErr string
	}{
		{"nothing positive", Panel{LogX: true, Series: []Series{gone}}, "no point with x > 0"},
		{"bars", Panel{LogX: true, Bars: true, Series: []Series{kept}}, "bars on a log x axis"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.panel.plot()
			errorAsWanted(t, err, tt.wantErr)
		})
	}
}

// YMin starts the y axis where it says, below the data or within it, and
// the legend's room is made above the data as before.
func TestPlotYMin(t *testing.T) {
	line := Series{Name: "acc", X: []float64{1, 2, 3}, Y: []float64{10, 80, 90}}
	for _, ymin := range []float64{0, 85} {
		p, err := Panel{Series: []Series{line}, YMin: &ymin}.plot()
		if err != nil {
			t.Fatal(err)
		}
		if p.Y.Min != ymin || p.Y.Max <= 90 {
			t.Errorf("YMin %g: y axis from %g to %g, want from %g to above 90", ymin, p.Y.Min, p.Y.Max, ymin)
		}
	}
	fit, err := Panel{Series: []Series{line}}.plot()
	if err != nil {
		t.Fatal(err)
	}
	if fit.Y.Min != 10 {
		t.Errorf("no YMin: y axis from %g, want the data's 10", fit.Y.Min)
	}
	_, err = Panel{Series: []Series{line}, YMin: new(90.0)}.plot()
	errorAsWanted(t, err, "not below the data's maximum 90")
}

func TestSeriesWidth(t *testing.T) {
	if w := (Series{}).lineStyle().Width; w != vg.Points(1.5) {
		t.Errorf("default width %v, want 1.5 pt", w)
	}
	if w := (Series{Width: 3}).lineStyle().Width; w != vg.Points(3) {
		t.Errorf("width %v, want 3 pt", w)
	}
}

// A legend outside the panel widens the image, and a long one makes it
// taller; the tiles of the other panels grow with it.
func TestPlotLegendOutside(t *testing.T) {
	many := func(n int, outside bool) []Panel {
		pn := Panel{Title: "many", LegendOutside: outside}
		for i := range n {
			pn.Series = append(pn.Series, Series{Name: fmt.Sprintf("s%02d", i), X: []float64{1, 2}, Y: []float64{float64(i), float64(i + 1)}, Color: i})
		}
		return []Panel{pn}
	}
	size := func(panels []Panel) image.Point {
		t.Helper()
		path := filepath.Join(t.TempDir(), "p.png")
		if err := PlotPanels(panels, path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return img.Bounds().Size()
	}
	inside, outside, long := size(many(3, false)), size(many(3, true)), size(many(30, true))
	if outside.X <= inside.X || outside.Y != inside.Y {
		t.Errorf("3 entries outside: %v, want wider than %v and as tall", outside, inside)
	}
	if long.X != outside.X || long.Y <= inside.Y {
		t.Errorf("30 entries outside: %v, want as wide as %v and taller", long, outside)
	}
	if two := size(append(many(30, true), many(3, false)...)); two.X < 2*long.X-1 || two.X > 2*long.X+1 || two.Y != long.Y {
		t.Errorf("two panels, one legend outside: %v, want twice %v side by side", two, long)
	}
}

// An accuracy axis ends at 1 at most: the legend's room is made above
// the data only below 1, else the legend goes to the bottom right when no
// line passes there, or beside the panel; and an axis of low accuracies
// ends just above them.
func TestAccuracyAxisEndsAtOne(t *testing.T) {
	rising := func(top float64) []Epoch {
		var es []Epoch
		for i := range 100 {
			f := 1 - math.Exp(-float64(i)/10)
			es = append(es, Epoch{Epoch: i + 1, Loss: 2 - f, TrainAcc: 0.1 + (top-0.1)*f, ValAcc: 0.1 + (top-0.2)*f, TestAcc: 0.1 + (top-0.25)*f})
		}
		return es
	}
	stuck := rising(1)
	for i := range stuck {
		stuck[i].TestAcc = 0.12 // a curve along the bottom, under the bottom right corner
	}
	for _, tc := range []struct {
		name          string
		epochs        []Epoch
		outside       bool
		maxLow, maxHi float64
	}{
		{"reaching 1", rising(1), false, 1, 1},
		{"a line along the bottom", stuck, true, 1, 1},
		{"low accuracy", rising(0.45), false, 0.46, 0.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var acc Panel
			for _, pn := range EpochPanels([]Run{{Epochs: tc.epochs}}) {
				if pn.Title == titleAccuracy {
					acc = pn
				}
			}
			p, outside, err := acc.layout()
			if err != nil {
				t.Fatal(err)
			}
			if p.Y.Max < tc.maxLow || p.Y.Max > tc.maxHi {
				t.Errorf("the y axis ends at %g, want within [%g, %g]", p.Y.Max, tc.maxLow, tc.maxHi)
			}
			if outside != tc.outside {
				t.Errorf("legend beside the panel: %v, want %v", outside, tc.outside)
			}
			if !outside && !p.Legend.Top && acc.linesIn([4]float64{p.X.Max - (p.X.Max-p.X.Min)/4, p.X.Max, p.Y.Min, p.Y.Min + (p.Y.Max-p.Y.Min)/4}) {
				t.Error("the legend is at the bottom right, where a line passes")
			}
		})
	}
	// Loss has no such bound.
	loss := EpochPanels([]Run{{Epochs: rising(1)}})[0]
	if p, _, err := loss.layout(); err != nil || p.Y.Max <= 2 {
		t.Errorf("loss axis ends at %g (err %v), want room above the data's 2", p.Y.Max, err)
	}
}

// Tick labels carry no zeros after the point that every label has.
func TestPlainTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		want     []string
	}{
		{0, 53, []string{"0", "25", "50"}},
		{0.3, 1, []string{"0.3", "0.6", "0.9"}},
		{0, 1, []string{"0.0", "0.5", "1.0"}},
	} {
		var got []string
		for _, tk := range (plainTicks{}).Ticks(tc.min, tc.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.min, tc.max, got, tc.want)
		}
	}
}

// plot is layout without saying where the legend goes.
func (pn Panel) plot() (*plot.Plot, error) {
	p, _, err := pn.layout()
	return p, err
}
