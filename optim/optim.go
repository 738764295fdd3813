package optim

import (
	"fmt"
	"math"
)

// Float is the element types a State updates.
type Float interface{ ~float32 | ~float64 }

// Rule names an update rule, as PyTorch names the optimiser.
type Rule string

const (
	SGD     Rule = "sgd"     // with optional (Nesterov) momentum; weight decay as L2
	Adam    Rule = "adam"    // weight decay as L2 added to the gradient
	AdamW   Rule = "adamw"   // decoupled weight decay (Loshchilov & Hutter)
	AMSGrad Rule = "amsgrad" // Adam with the running maximum of v; weight decay as L2
)

// Config is a rule and its hyperparameters. Zero Beta1, Beta2 and Eps take
// PyTorch's defaults 0.9, 0.999 and 1e-8. The learning rate and the weight
// decay are arguments of State.Step instead, because callers vary them by
// step (schedules) and by parameter.
type Config struct {
	Rule     Rule
	Momentum float64 // SGD; 0 keeps no momentum buffer
	Nesterov bool    // SGD
	Beta1    float64 // the Adam rules
	Beta2    float64
	Eps      float64
	// CatchUp is for gradients that arrive sparsely, a coordinate's
	// gradient of several steps in one sum (top-k gradient exchange with
	// error feedback): see State.CatchUpStep.
	CatchUp bool
}

func (c Config) withDefaults() Config {
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	return c
}

// Check reports what makes c unusable, if anything.
func (c Config) Check() error {
	c = c.withDefaults()
	switch {
	case c.Rule != SGD && c.Rule != Adam && c.Rule != AdamW && c.Rule != AMSGrad:
		return fmt.Errorf("optim: unknown optimizer %q (want sgd, adam, adamw or amsgrad)", c.Rule)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("optim: momentum %v outside [0, 1)", c.Momentum)
	case c.Nesterov && c.Momentum == 0:
		return fmt.Errorf("optim: Nesterov momentum needs a positive momentum")
	case !(c.Beta1 >= 0 && c.Beta1 < 1 && c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("optim: betas (%v, %v) outside [0, 1)", c.Beta1, c.Beta2)
	}
	return nil
}

// State is one parameter's optimiser memory under a rule.
type State[T Float] struct {
	// Steps counts the steps taken, as PyTorch's per-parameter "step":
	// Adam's bias correction and SGD's first momentum step read it.
	// Restoring a state sets it along with the buffers.
	Steps int
	cfg   Config
	// Stored in T: float32 buffers are rounded after every step, as
	// PyTorch's float32 state is.
	momentum, expAvg, expAvgSq, maxExpAvgSq []T
	// lastStep is each coordinate's step when last updated (CatchUp),
	// stored in T as the other buffers are: exact up to 2^24 steps.
	lastStep []T
}

// NewState returns a fresh state for a parameter of n elements. It panics if
// c fails Check, so check a configuration from outside the program first.
func NewState[T Float](c Config, n int) *State[T] {
	if err := c.Check(); err != nil {
		panic(err)
	}
	s := &State[T]{cfg: c.withDefaults()}
	switch c.Rule {
	case SGD:
		if c.Momentum > 0 {
			s.momentum = make([]T, n)
		}
	case AMSGrad:
		s.maxExpAvgSq = make([]T, n)
		fallthrough
	default:
		s.expAvg, s.expAvgSq = make([]T, n), make([]T, n)
	}
	if c.CatchUp {
		s.lastStep = make([]T, n)
	}
	return s
}

// Step takes one step: x = base − the rule's step for gradient grad, at
// learning rate lr and weight decay coefficient decay (decoupled for AdamW,
// L2 otherwise; it decays base). base may alias x; x, base, grad and the
// state have the same length.
func (s *State[T]) Step(x, base, grad []T, lr, decay float64) {
	base, grad = base[:len(x)], grad[:len(x)]
	s.Steps++
	if s.cfg.Rule == SGD {
		s.sgd(x, base, grad, lr, decay)
	} else {
		s.adam(x, base, grad, lr, decay)
	}
	if s.lastStep != nil { // every coordinate stepped: CatchUpStep owes none of them this step
		now := T(s.Steps)
		for j := range s.lastStep {
			s.lastStep[j] = now
		}
	}
}

func (s *State[T]) sgd(x, base, grad []T, lr, decay float64) {
	for j := range x {
		x[j] = T(s.sgdCoordinate(j, float64(base[j]), float64(grad[j]), lr, decay, s.Steps))
	}
}

// sgdCoordinate returns coordinate j of base after SGD's step number step
// with gradient g, updating j's momentum.
func (s *State[T]) sgdCoordinate(j int, base, g, lr, decay float64, step int) float64 {
	d := g + decay*base
	if s.momentum != nil {
		mu := s.cfg.Momentum
		if step == 1 {
			s.momentum[j] = T(d) // PyTorch starts the buffer at the first gradient
		} else {
			s.momentum[j] = T(mu*float64(s.momentum[j]) + d)
		}
		if s.cfg.Nesterov {
			d += mu * float64(s.momentum[j])
		} else {
			d = float64(s.momentum[j])
		}
	}
	return base - lr*d
}

func (s *State[T]) adam(x, base, grad []T, lr, decay float64) {
	c := s.adamCorrection(s.Steps)
	for j := range x {
		x[j] = T(s.adamCoordinate(j, float64(base[j]), float64(grad[j]), lr, decay, c))
	}
}

// adamCorrection is Adam's bias correction at a step: 1 − β1^t and
// sqrt(1 − β2^t).
type adamCorrection struct{ bc1, sqrtBC2 float64 }

func (s *State[T]) adamCorrection(step int) adamCorrection {
	t := float64(step)
	return adamCorrection{1 - math.Pow(s.cfg.Beta1, t), math.Sqrt(1 - math.Pow(s.cfg.Beta2, t))}
}

// adamCoordinate returns coordinate j of base after an Adam step with
// gradient g, updating j's moments.
func (s *State[T]) adamCoordinate(j int, xj, d, lr, decay float64, c adamCorrection) float64 {
	b1, b2 := s.cfg.Beta1, s.cfg.Beta2
	if s.cfg.Rule == AdamW {
		xj *= 1 - lr*decay
	} else {
		d += decay * xj
	}
	mj := b1*float64(s.expAvg[j]) + (1-b1)*d
	vj := b2*float64(s.expAvgSq[j]) + (1-b2)*d*d
	s.expAvg[j], s.expAvgSq[j] = T(mj), T(vj)
	if s.maxExpAvgSq != nil {
		vj = max(vj, float64(s.maxExpAvgSq[j]))
		s.maxExpAvgSq[j] = T(vj)
	}
	// The unrounded moments step x, and v's bias correction divides
	// sqrt(v), as in torch.optim.Adam.
	return xj - lr/c.bc1*mj/(math.Sqrt(vj)/c.sqrtBC2+s.cfg.Eps)
}

// BufferNames are the names of every buffer a State may keep, in the
// order Buffers lists them: PyTorch's, then CatchUp's last_step.
var BufferNames = []string{"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "last_step"}

// Buffer is one of a State's buffers under its PyTorch state_dict name.
type Buffer[T Float] struct {
	Name string
	Data []T // the State's own memory: copying into it restores the buffer
}

// Buffers lists the buffers s's rule keeps, in PyTorch's order: SGD's
// momentum_buffer (with momentum only); Adam's exp_avg, exp_avg_sq and, for
// AMSGrad, max_exp_avg_sq; then, with CatchUp, last_step.
func (s *State[T]) Buffers() []Buffer[T] {
	var bs []Buffer[T]
	for i, data := range [][]T{s.momentum, s.expAvg, s.expAvgSq, s.maxExpAvgSq, s.lastStep} {
		if data != nil {
			bs = append(bs, Buffer[T]{BufferNames[i], data})
		}
	}
	return bs
}
