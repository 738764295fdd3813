package nn

import (
	"fmt"
	"math"
	"slices"
)

// Algorithm names an optimiser.
type Algorithm string

const (
	SGD     Algorithm = "sgd"     // with optional (Nesterov) momentum
	Adam    Algorithm = "adam"    // weight decay as L2 added to the gradient
	AdamW   Algorithm = "adamw"   // decoupled weight decay (Loshchilov & Hutter)
	AMSGrad Algorithm = "amsgrad" // Adam with the running maximum of v
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
}

// Optimizer updates parameters from their gradients, as PyTorch's optimisers
// of the same names do.
type Optimizer struct {
	cfg    OptimizerConfig
	params []*Param
	steps  int
	// Per-parameter state, named as in PyTorch's state_dict.
	momentum, expAvg, expAvgSq, maxExpAvgSq [][]float32
}

// NewOptimizer returns an optimiser over params.
func NewOptimizer(params []*Param, cfg OptimizerConfig) (*Optimizer, error) {
	if cfg.Beta1 == 0 {
		cfg.Beta1 = 0.9
	}
	if cfg.Beta2 == 0 {
		cfg.Beta2 = 0.999
	}
	if cfg.Eps == 0 {
		cfg.Eps = 1e-8
	}
	if cfg.Schedule == nil {
		cfg.Schedule = Constant{}
	}
	switch {
	case cfg.LR <= 0 || math.IsNaN(cfg.LR) || math.IsInf(cfg.LR, 0):
		return nil, fmt.Errorf("nn: learning rate %v; want a positive number", cfg.LR)
	case cfg.Momentum < 0 || cfg.Momentum >= 1:
		return nil, fmt.Errorf("nn: momentum %v outside [0, 1)", cfg.Momentum)
	case cfg.Nesterov && cfg.Momentum == 0:
		return nil, fmt.Errorf("nn: Nesterov momentum needs a positive momentum")
	case cfg.Beta1 < 0 || cfg.Beta1 >= 1 || cfg.Beta2 < 0 || cfg.Beta2 >= 1:
		return nil, fmt.Errorf("nn: betas (%v, %v) outside [0, 1)", cfg.Beta1, cfg.Beta2)
	}
	o := &Optimizer{cfg: cfg, params: params}
	n := len(params)
	alloc := func() [][]float32 {
		s := make([][]float32, n)
		for i, p := range params {
			s[i] = make([]float32, len(p.Value.Data))
		}
		return s
	}
	switch cfg.Algorithm {
	case SGD:
		if cfg.Momentum > 0 {
			o.momentum = alloc()
		}
	case Adam, AdamW:
		o.expAvg, o.expAvgSq = alloc(), alloc()
	case AMSGrad:
		o.expAvg, o.expAvgSq, o.maxExpAvgSq = alloc(), alloc(), alloc()
	default:
		return nil, fmt.Errorf("nn: unknown optimizer %q (want sgd, adam, adamw or amsgrad)", cfg.Algorithm)
	}
	return o, nil
}

// LR is the learning rate the next Step uses.
func (o *Optimizer) LR() float64 { return o.cfg.LR * o.cfg.Schedule.Factor(o.steps) }

// Steps is the number of steps taken.
func (o *Optimizer) Steps() int { return o.steps }

// Step updates every parameter from its gradient.
func (o *Optimizer) Step() {
	lr := o.LR()
	o.steps++
	t := float64(o.steps)
	for i, p := range o.params {
		w, g, wd := p.Value.Data, p.Grad.Data, p.WeightDecay
		switch o.cfg.Algorithm {
		case SGD:
			o.sgd(i, w, g, lr, wd)
		default:
			bc1 := 1 - math.Pow(o.cfg.Beta1, t)
			bc2 := 1 - math.Pow(o.cfg.Beta2, t)
			o.adam(i, w, g, lr, wd, bc1, bc2)
		}
	}
}

func (o *Optimizer) sgd(i int, w, g []float32, lr, wd float64) {
	mu := o.cfg.Momentum
	for j := range w {
		d := float64(g[j]) + wd*float64(w[j])
		if o.momentum != nil {
			b := &o.momentum[i][j]
			if o.steps == 1 {
				*b = float32(d) // PyTorch starts the buffer at the first gradient
			} else {
				*b = float32(mu*float64(*b) + d)
			}
			if o.cfg.Nesterov {
				d += mu * float64(*b)
			} else {
				d = float64(*b)
			}
		}
		w[j] = float32(float64(w[j]) - lr*d)
	}
}

func (o *Optimizer) adam(i int, w, g []float32, lr, wd, bc1, bc2 float64) {
	b1, b2, eps := o.cfg.Beta1, o.cfg.Beta2, o.cfg.Eps
	m, v := o.expAvg[i], o.expAvgSq[i]
	var vmax []float32
	if o.maxExpAvgSq != nil {
		vmax = o.maxExpAvgSq[i]
	}
	decoupled := o.cfg.Algorithm == AdamW
	sqrtBC2 := math.Sqrt(bc2)
	for j := range w {
		x := float64(w[j])
		d := float64(g[j])
		if decoupled {
			x *= 1 - lr*wd
		} else {
			d += wd * x
		}
		mj := b1*float64(m[j]) + (1-b1)*d
		vj := b2*float64(v[j]) + (1-b2)*d*d
		m[j], v[j] = float32(mj), float32(vj)
		if vmax != nil {
			vj = max(vj, float64(vmax[j]))
			vmax[j] = float32(vj)
		}
		x -= lr / bc1 * mj / (math.Sqrt(vj)/sqrtBC2 + eps)
		w[j] = float32(x)
	}
}

// OptimizerState is an optimiser's exportable state: the step count and its
// buffers, keyed "<param name>.<buffer>" with PyTorch's buffer names
// (momentum_buffer, exp_avg, exp_avg_sq, max_exp_avg_sq).
type OptimizerState struct {
	Steps   int
	Buffers map[string][]float32
}

func (o *Optimizer) buffers() []struct {
	name string
	s    [][]float32
} {
	all := []struct {
		name string
		s    [][]float32
	}{{"momentum_buffer", o.momentum}, {"exp_avg", o.expAvg}, {"exp_avg_sq", o.expAvgSq}, {"max_exp_avg_sq", o.maxExpAvgSq}}
	return slices.DeleteFunc(all, func(b struct {
		name string
		s    [][]float32
	}) bool {
		return b.s == nil
	})
}

// State returns a copy of the optimiser's state.
func (o *Optimizer) State() OptimizerState {
	st := OptimizerState{Steps: o.steps, Buffers: map[string][]float32{}}
	for _, b := range o.buffers() {
		for i, p := range o.params {
			st.Buffers[p.Name+"."+b.name] = slices.Clone(b.s[i])
		}
	}
	return st
}

// SetState restores a state from State. Every buffer the optimiser uses must
// be present with the right length, and no other may be.
func (o *Optimizer) SetState(st OptimizerState) error {
	if st.Steps < 0 {
		return fmt.Errorf("nn: optimizer state has %d steps", st.Steps)
	}
	want := 0
	for _, b := range o.buffers() {
		for i, p := range o.params {
			key := p.Name + "." + b.name
			v, ok := st.Buffers[key]
			if !ok {
				return fmt.Errorf("nn: optimizer state lacks %s (was it saved by a different optimizer?)", key)
			}
			if len(v) != len(b.s[i]) {
				return fmt.Errorf("nn: optimizer state %s has %d values, want %d", key, len(v), len(b.s[i]))
			}
			want++
		}
	}
	if len(st.Buffers) != want {
		return fmt.Errorf("nn: optimizer state has %d buffers, want %d (was it saved by a different optimizer or model?)", len(st.Buffers), want)
	}
	for _, b := range o.buffers() {
		for i, p := range o.params {
			copy(b.s[i], st.Buffers[p.Name+"."+b.name])
		}
	}
	o.steps = st.Steps
	return nil
}
