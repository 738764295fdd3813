package nn

import (
	"math"
	"testing"
)

// scalarParam returns a one-element parameter holding 1.
func scalarParam(decay float64) *Param {
	p := newParam("w", 1, 1, []int{1}, false)
	p.Value.Data[0] = 1
	p.WeightDecay = decay
	return p
}

// TestOptimizerSteps checks the parameter after each step against values
// worked out by hand (PyTorch's update rules; Adam's reference numbers come
// from a direct float64 transcription of torch.optim.Adam's formulas).
func TestOptimizerSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   OptimizerConfig
		decay float64
		grads []float32
		want  []float64
	}{
		{"sgd", OptimizerConfig{Algorithm: SGD, LR: 0.1}, 0, []float32{0.5, 0.5}, []float64{0.95, 0.9}},
		// L2: g = 0.5 + 0.1·1 = 0.6.
		{"sgd decay", OptimizerConfig{Algorithm: SGD, LR: 0.1}, 0.1, []float32{0.5}, []float64{0.94}},
		// buf = 0.5, then 0.9·0.5 + 0.5 = 0.95.
		{"sgd momentum", OptimizerConfig{Algorithm: SGD, LR: 0.1, Momentum: 0.9}, 0, []float32{0.5, 0.5}, []float64{0.95, 0.855}},
		// Nesterov steps by g + 0.9·buf: 0.95, then 0.5 + 0.9·0.95 = 1.355.
		{"sgd nesterov", OptimizerConfig{Algorithm: SGD, LR: 0.1, Momentum: 0.9, Nesterov: true}, 0, []float32{0.5, 0.5}, []float64{0.905, 0.7695}},
		// Adam's first step moves by lr·sign(g).
		{"adam", OptimizerConfig{Algorithm: Adam, LR: 0.1}, 0, []float32{0.5, -1}, []float64{0.9, 0.9366103542405654}},
		{"adam L2", OptimizerConfig{Algorithm: Adam, LR: 0.1}, 0.1, []float32{0.5, -1}, []float64{0.9, 0.9252635194456061}},
		// Decoupled: w ← w·(1 − lr·wd) before the Adam step.
		{"adamw", OptimizerConfig{Algorithm: AdamW, LR: 0.1}, 0.1, []float32{0.5, -1}, []float64{0.89, 0.9177103542205653}},
		{"adam shrinking", OptimizerConfig{Algorithm: Adam, LR: 0.1}, 0, []float32{1, 0.01, 0.01}, []float64{0.9, 0.832253058026447, 0.7792477091273107}},
		// AMSGrad keeps v at its maximum, so its steps after a large gradient are smaller.
		{"amsgrad", OptimizerConfig{Algorithm: AMSGrad, LR: 0.1}, 0, []float32{1, 0.01, 0.01}, []float64{0.9, 0.8322835510128204, 0.7793259045394781}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scalarParam(tc.decay)
			o, err := NewOptimizer([]*Param{p}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range tc.grads {
				p.Grad.Data[0] = g
				o.Step()
				if got := float64(p.Value.Data[0]); math.Abs(got-tc.want[i]) > 2e-7 {
					t.Fatalf("after step %d: w = %.9g, want %.9g", i+1, got, tc.want[i])
				}
			}
		})
	}
}

func TestOptimizerConfigErrors(t *testing.T) {
	for _, cfg := range []OptimizerConfig{
		{Algorithm: "rmsprop", LR: 0.1},
		{Algorithm: Adam, LR: 0},
		{Algorithm: Adam, LR: math.NaN()},
		{Algorithm: SGD, LR: 0.1, Momentum: 1},
		{Algorithm: SGD, LR: 0.1, Nesterov: true},
		{Algorithm: Adam, LR: 0.1, Beta1: 1},
	} {
		if _, err := NewOptimizer(nil, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestSchedules(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Schedule
		step int
		want float64
	}{
		{"constant", Constant{}, 1000, 1},
		{"step before", StepDecay{StepSize: 10, Gamma: 0.5}, 9, 1},
		{"step at", StepDecay{StepSize: 10, Gamma: 0.5}, 10, 0.5},
		{"step twice", StepDecay{StepSize: 10, Gamma: 0.5}, 25, 0.25},
		{"cosine start", Cosine{Steps: 100}, 0, 1},
		{"cosine middle", Cosine{Steps: 100}, 50, 0.5},
		{"cosine quarter", Cosine{Steps: 100}, 25, (1 + math.Sqrt2/2) / 2},
		{"cosine end", Cosine{Steps: 100}, 100, 0},
		{"cosine after", Cosine{Steps: 100, MinFactor: 0.1}, 300, 0.1},
		{"cosine floor", Cosine{Steps: 100, MinFactor: 0.1}, 50, 0.55},
	} {
		if got := tc.s.Factor(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Factor(%d) = %v, want %v", tc.name, tc.step, got, tc.want)
		}
	}
	p := scalarParam(0)
	o, _ := NewOptimizer([]*Param{p}, OptimizerConfig{Algorithm: SGD, LR: 0.2, Schedule: StepDecay{StepSize: 1, Gamma: 0.5}})
	for i, want := range []float64{0.2, 0.1, 0.05} {
		if got := o.LR(); math.Abs(got-want) > 1e-12 {
			t.Errorf("LR before step %d = %v, want %v", i, got, want)
		}
		o.Step()
	}
	for _, tc := range []struct {
		name     string
		stepSize int
		gamma    float64
		total    int
		ok       bool
	}{{"constant", 0, 0, 0, true}, {"step", 10, 0.5, 0, true}, {"step", 0, 0.5, 0, false},
		{"cosine", 0, 0, 200, true}, {"cosine", 0, 0, 0, false}, {"linear", 0, 0, 0, false}} {
		if _, err := ParseSchedule(tc.name, tc.stepSize, tc.gamma, tc.total); (err == nil) != tc.ok {
			t.Errorf("ParseSchedule(%q, %d, %v, %d): error %v", tc.name, tc.stepSize, tc.gamma, tc.total, err)
		}
	}
}

// TestOptimizerStateRoundTrip checks that a restored optimiser continues
// exactly as the original.
func TestOptimizerStateRoundTrip(t *testing.T) {
	for _, alg := range []Algorithm{SGD, Adam, AdamW, AMSGrad} {
		t.Run(string(alg), func(t *testing.T) {
			cfg := OptimizerConfig{Algorithm: alg, LR: 0.05, Momentum: 0.9}
			if alg != SGD {
				cfg.Momentum = 0
			}
			a, b := scalarParam(0.01), scalarParam(0.01)
			oa, _ := NewOptimizer([]*Param{a}, cfg)
			for _, g := range []float32{0.3, -0.7, 1.1} {
				a.Grad.Data[0] = g
				oa.Step()
			}
			ob, _ := NewOptimizer([]*Param{b}, cfg)
			if err := ob.SetState(oa.State()); err != nil {
				t.Fatal(err)
			}
			b.Value.Data[0] = a.Value.Data[0]
			a.Grad.Data[0], b.Grad.Data[0] = 0.4, 0.4
			oa.Step()
			ob.Step()
			if a.Value.Data[0] != b.Value.Data[0] || ob.Steps() != 4 {
				t.Errorf("restored optimiser diverged: %v vs %v after %d steps", b.Value.Data[0], a.Value.Data[0], ob.Steps())
			}
		})
	}
	p := scalarParam(0)
	sgd, _ := NewOptimizer([]*Param{p}, OptimizerConfig{Algorithm: SGD, LR: 0.1, Momentum: 0.5})
	adam, _ := NewOptimizer([]*Param{p}, OptimizerConfig{Algorithm: Adam, LR: 0.1})
	if err := adam.SetState(sgd.State()); err == nil {
		t.Error("Adam accepted SGD's state")
	}
	st := adam.State()
	st.Buffers["w.exp_avg"] = []float32{1, 2}
	if err := adam.SetState(st); err == nil {
		t.Error("a buffer of the wrong length was accepted")
	}
}

// TestOptimizerCatchUpUsesEachStepsRate checks that a coordinate catching
// up takes each missed step at that step's scheduled rate: a gradient sum
// arriving every other step under a rate that halves every step moves
// the coordinate as the spread gradient at every step does.
func TestOptimizerCatchUpUsesEachStepsRate(t *testing.T) {
	cfg := OptimizerConfig{Algorithm: Adam, LR: 0.1, Schedule: StepDecay{StepSize: 1, Gamma: 0.5}}
	dense, lazy := scalarParam(0.1), scalarParam(0.1)
	od, err := NewOptimizer([]*Param{dense}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CatchUp = true
	ol, err := NewOptimizer([]*Param{lazy}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 6; step++ {
		dense.Grad.Data[0] = 0.25
		od.Step()
		lazy.Grad.Data[0] = 0
		if step%2 == 0 {
			lazy.Grad.Data[0] = 0.5
		}
		ol.Step()
		if step%2 == 0 && lazy.Value.Data[0] != dense.Value.Data[0] {
			t.Fatalf("after step %d: caught up to %.9g, stepping every time %.9g", step, lazy.Value.Data[0], dense.Value.Data[0])
		}
	}
}

// A state saved without catch-up (every coordinate stepped at every step)
// restores into an optimiser with it: every coordinate was last stepped at
// the state's step, and the next steps are those of an optimiser that had
// caught up all along.
func TestOptimizerCatchUpRestoresAStateWithoutLastSteps(t *testing.T) {
	cfg := OptimizerConfig{Algorithm: Adam, LR: 0.1}
	plain := scalarParam(0)
	op, err := NewOptimizer([]*Param{plain}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CatchUp = true
	caught := scalarParam(0)
	oc, err := NewOptimizer([]*Param{caught}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []float32{0.5, -0.25, 1} {
		plain.Grad.Data[0], caught.Grad.Data[0] = g, g
		op.Step()
		oc.Step()
	}
	resumed := scalarParam(0)
	resumed.Value.Data[0] = plain.Value.Data[0]
	or, err := NewOptimizer([]*Param{resumed}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := or.SetState(op.State()); err != nil {
		t.Fatalf("restoring a state without last_step: %v", err)
	}
	for _, g := range []float32{0, 0, 0.75} { // two steps without gradient, then one with
		resumed.Grad.Data[0], caught.Grad.Data[0] = g, g
		or.Step()
		oc.Step()
	}
	if resumed.Value.Data[0] != caught.Value.Data[0] {
		t.Fatalf("resumed %v, caught up all along %v", resumed.Value.Data[0], caught.Value.Data[0])
	}
}
