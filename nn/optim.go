package nn

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/graft-gnn/graft/optim"
)

// Algorithm names an optimiser. It is optim's Rule: the rules are
// implemented there, once for nn and train/decentral.
type Algorithm = optim.Rule

// The optimisers, under their old names here (see optim for each rule).
const (
	SGD     = optim.SGD
	Adam    = optim.Adam
	AdamW   = optim.AdamW
	AMSGrad = optim.AMSGrad
)

// OptimizerConfig configures NewOptimizer. Zero Beta1, Beta2 and Eps take
// PyTorch's defaults 0.9, 0.999 and 1e-8. Weight decay is per parameter
// (Param.WeightDecay).
type OptimizerConfig struct {
	Algorithm Algorithm
	LR        float64
	Momentum  float64 // SGD
	Nesterov  bool    // SGD
	Beta1     float64
	Beta2     float64
	Eps       float64
	Schedule  Schedule // nil means constant
	// CatchUp steps a coordinate only when its gradient is non-zero,
	// first taking the steps it missed (optim.State.CatchUpStep): for a
	// top-k gradient exchange, which delivers gradients late in sums.
	CatchUp bool
}

// Optimizer updates parameters from their gradients, as PyTorch's optimisers
// of the same names do. The update rules are package optim's; this adds the
// learning-rate schedule and the state keyed by parameter name.
type Optimizer struct {
	cfg    OptimizerConfig
	params []*Param
	states []*optim.State[float32] // one per parameter
	steps  int
	whole  bool // SetWhole
}

// NewOptimizer returns an optimiser over params.
func NewOptimizer(params []*Param, cfg OptimizerConfig) (*Optimizer, error) {
	if cfg.Schedule == nil {
		cfg.Schedule = Constant{}
	}
	if cfg.LR <= 0 || math.IsNaN(cfg.LR) || math.IsInf(cfg.LR, 0) {
		return nil, fmt.Errorf("nn: learning rate %v; want a positive number", cfg.LR)
	}
	rule := optim.Config{Rule: cfg.Algorithm, Momentum: cfg.Momentum, Nesterov: cfg.Nesterov,
		Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: cfg.Eps, CatchUp: cfg.CatchUp}
	if err := rule.Check(); err != nil {
		return nil, err
	}
	o := &Optimizer{cfg: cfg, params: params}
	for _, p := range params {
		o.states = append(o.states, optim.NewState[float32](rule, len(p.Value.Data)))
	}
	return o, nil
}

// LR is the learning rate the next Step uses.
func (o *Optimizer) LR() float64 { return o.cfg.LR * o.cfg.Schedule.Factor(o.steps) }

// lrOfStep is the learning rate of step k (1 for the first).
func (o *Optimizer) lrOfStep(k int) float64 { return o.cfg.LR * o.cfg.Schedule.Factor(k-1) }

// Steps is the number of steps taken.
func (o *Optimizer) Steps() int { return o.steps }

// SetWhole says whether the steps that follow have every coordinate's
// gradient whole (an exact sum during a compression's warm-up): with
// CatchUp, they then step as without it, every coordinate, and the catch-up
// steps that come later owe nothing for them.
func (o *Optimizer) SetWhole(whole bool) { o.whole = whole }

// Step updates every parameter from its gradient.
func (o *Optimizer) Step() {
	lr := o.LR()
	o.steps++
	for i, p := range o.params {
		if o.cfg.CatchUp && !o.whole {
			o.states[i].CatchUpStep(p.Value.Data, p.Grad.Data, o.lrOfStep, p.WeightDecay)
		} else {
			o.states[i].Step(p.Value.Data, p.Value.Data, p.Grad.Data, lr, p.WeightDecay)
		}
	}
}

// OptimizerState is an optimiser's exportable state: the step count and its
// buffers, keyed "<param name>.<buffer>" with PyTorch's buffer names
// (momentum_buffer, exp_avg, exp_avg_sq, max_exp_avg_sq).
type OptimizerState struct {
	Steps   int
	Buffers map[string][]float32
}

// State returns a copy of the optimiser's state.
func (o *Optimizer) State() OptimizerState {
	st := OptimizerState{Steps: o.steps, Buffers: map[string][]float32{}}
	for i, p := range o.params {
		for _, b := range o.states[i].Buffers() {
			st.Buffers[p.Name+"."+b.Name] = slices.Clone(b.Data)
		}
	}
	return st
}

// SetState restores a state from State. Every buffer the optimiser uses must
// be present with the right length, and no other may be; but a state
// without CatchUp's last_step (saved by an optimiser without it, which
// stepped every coordinate at every step) restores with every coordinate
// last stepped at the state's step.
func (o *Optimizer) SetState(st OptimizerState) error {
	if st.Steps < 0 {
		return fmt.Errorf("nn: optimizer state has %d steps", st.Steps)
	}
	if o.cfg.CatchUp {
		st = withLastSteps(st, o.params)
	}
	want := 0
	for i, p := range o.params {
		for _, b := range o.states[i].Buffers() {
			key := p.Name + "." + b.Name
			v, ok := st.Buffers[key]
			if !ok {
				return fmt.Errorf("nn: optimizer state lacks %s (was it saved by a different optimizer?)", key)
			}
			if len(v) != len(b.Data) {
				return fmt.Errorf("nn: optimizer state %s has %d values, want %d", key, len(v), len(b.Data))
			}
			want++
		}
	}
	if len(st.Buffers) != want {
		return fmt.Errorf("nn: optimizer state has %d buffers, want %d (was it saved by a different optimizer or model?)", len(st.Buffers), want)
	}
	for i, p := range o.params {
		for _, b := range o.states[i].Buffers() {
			copy(b.Data, st.Buffers[p.Name+"."+b.Name])
		}
		o.states[i].Steps = st.Steps
	}
	o.steps = st.Steps
	return nil
}

// withLastSteps returns st with a last_step buffer, every value st.Steps,
// for each parameter that has none.
func withLastSteps(st OptimizerState, params []*Param) OptimizerState {
	var added map[string][]float32
	for _, p := range params {
		key := p.Name + ".last_step"
		if _, ok := st.Buffers[key]; ok {
			continue
		}
		if added == nil {
			added = maps.Clone(st.Buffers)
		}
		last := make([]float32, len(p.Value.Data))
		for i := range last {
			last[i] = float32(st.Steps)
		}
		added[key] = last
	}
	if added != nil {
		st.Buffers = added
	}
	return st
}
