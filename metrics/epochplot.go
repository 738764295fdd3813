package metrics

import (
	"errors"
	"fmt"
)

// Run is one training run's epochs, named in the legend when runs are
// compared.
type Run struct {
	Name   string
	Epochs []Epoch
}

// Plot draws a run's epochs (the panels EpochPanels lists) to path, as PNG
// or SVG by the extension.
func Plot(epochs []Epoch, path string) error {
	return PlotRuns([]Run{{Epochs: epochs}}, path)
}

// PlotRuns draws several runs into the same panels, to compare them.
func PlotRuns(runs []Run, path string) error {
	panels := EpochPanels(runs)
	if len(panels) == 0 {
		return errors.New("metrics: no epochs to plot")
	}
	return PlotPanels(panels, path)
}

// The titles of the panels EpochPanels draws.
const (
	titleLoss          = "loss"
	titleAccuracy      = "accuracy"
	titleAccuracyBytes = "accuracy against communication"
	titleAccuracyTime  = "accuracy against emulated time"
	titleWorkers       = "compute time per worker"
)

// EpochPanels lays out what PlotRuns draws, a panel only where some run
// has its data: loss and accuracy (train, validation, test) against epoch
// for any epochs at all; accuracy against cumulative bytes sent when the
// epochs count bytes; accuracy against cumulative emulated seconds when
// they carry emulated time; and each worker's compute seconds over the run
// as bars, with their max/mean, when a run had two workers or more.
func EpochPanels(runs []Run) []Panel {
	epochs := axis{value: func(e Epoch) float64 { return float64(e.Epoch) }}
	bytesMB := axis{value: func(e Epoch) float64 { return float64(e.Bytes()) / 1e6 }, cumulative: true, optional: true}
	// Every run counts emulated time, its compute time without a link:
	// the axis is a run's only when it had an emulated link (--link).
	emulated := axis{value: func(e Epoch) float64 { return e.EmulatedSeconds }, cumulative: true, optional: true,
		measure: func(e Epoch) float64 { return e.EmulatedCommSeconds }}
	one := 1.0 // accuracy axes end at 1 at most
	candidates := []Panel{
		{Title: titleLoss, XLabel: "epoch", YLabel: "loss", Series: curves(runs, lossQuantities, epochs)},
		{Title: titleAccuracy, XLabel: "epoch", YLabel: "accuracy", Series: curves(runs, accuracyQuantities, epochs), YMax: &one},
		{Title: titleAccuracyBytes, XLabel: "bytes sent, cumulative (MB)", YLabel: "accuracy", Series: curves(runs, accuracyQuantities, bytesMB), YMax: &one},
		{Title: titleAccuracyTime, XLabel: "emulated time, cumulative (s)", YLabel: "accuracy", Series: curves(runs, accuracyQuantities, emulated), YMax: &one},
		{Title: titleWorkers, XLabel: "worker", YLabel: "compute seconds", Series: workerBars(runs), Bars: true},
	}
	var panels []Panel
	for _, p := range candidates {
		if len(p.Series) > 0 {
			panels = append(panels, p)
		}
	}
	return panels
}

// quantity is one figure of an epoch drawn as a line.
type quantity struct {
	name  string
	value func(Epoch) float64
}

var (
	lossQuantities = []quantity{
		{"train", func(e Epoch) float64 { return e.Loss }},
		{"val", func(e Epoch) float64 { return e.ValLoss }},
	}
	accuracyQuantities = []quantity{
		{"train", func(e Epoch) float64 { return e.TrainAcc }},
		{"val", func(e Epoch) float64 { return e.ValAcc }},
		{"test", func(e Epoch) float64 { return e.TestAcc }},
	}
)

// axis is what a panel's x axis shows.
type axis struct {
	value      func(Epoch) float64
	cumulative bool // summed over the epochs so far
	// optional figures are left out for a run where every value is zero:
	// it did not measure them (one worker sends no bytes, and only a run
	// on an emulated link has emulated time).
	optional bool
	// measure, if set, is the figure that is zero at every epoch of a run
	// that did not measure the axis (else value is).
	measure func(Epoch) float64
}

// of gives the axis's value at each epoch, or nil when the run has none.
func (a axis) of(epochs []Epoch) []float64 {
	xs := make([]float64, len(epochs))
	var sum float64
	measured := false
	for i, e := range epochs {
		v := a.value(e)
		if a.measure != nil {
			measured = measured || a.measure(e) != 0
		} else {
			measured = measured || v != 0
		}
		if a.cumulative {
			sum += v
			v = sum
		}
		xs[i] = v
	}
	if len(epochs) == 0 || (a.optional && !measured) {
		return nil
	}
	return xs
}

// curves draws each quantity of each run against x, leaving out runs that
// lack x. One run is coloured by quantity; several by run, with a
// dash pattern per quantity, so a run keeps one colour in every panel.
func curves(runs []Run, quantities []quantity, x axis) []Series {
	var out []Series
	for r, run := range runs {
		xs := x.of(run.Epochs)
		if xs == nil {
			continue
		}
		for q, qt := range quantities {
			s := Series{Name: qt.name, X: xs, Y: make([]float64, len(run.Epochs)), Color: q}
			if len(runs) > 1 {
				s.Name, s.Color, s.Dash = run.Name+" "+qt.name, r, q
			}
			for i, e := range run.Epochs {
				s.Y[i] = qt.value(e)
			}
			out = append(out, s)
		}
	}
	return out
}

// workerBars is each run's per-worker compute seconds summed over its
// epochs, for the runs with two workers or more: one worker has no
// balance to show.
func workerBars(runs []Run) []Series {
	var out []Series
	for r, run := range runs {
		var t Totals
		for _, e := range run.Epochs {
			t.add(e)
		}
		if len(t.WorkerCompute) < 2 {
			continue
		}
		s := Series{Name: fmt.Sprintf("max/mean %.2f", t.WorkerImbalance()), Y: t.WorkerCompute, Color: r}
		if len(runs) > 1 {
			s.Name = run.Name + " " + s.Name
		}
		for k := range t.WorkerCompute {
			s.X = append(s.X, float64(k))
		}
		out = append(out, s)
	}
	return out
}
