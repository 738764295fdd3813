package decentral

import (
	"fmt"
	"math"
)

// Rule is the local update rule an optimiser applies to a gradient.
type Rule int

const (
	SGD Rule = iota
	Adam
	AMSGrad
)

func (r Rule) String() string {
	switch r {
	case SGD:
		return "sgd"
	case Adam:
		return "adam"
	case AMSGrad:
		return "amsgrad"
	}
	return fmt.Sprintf("Rule(%d)", int(r))
}

// Optimizer configures an update rule. Agents apply it after mixing their
// parameters with their neighbours' (D-SGD, D-Adam, D-AMSGrad: x_i ←
// Σ_j c_ij x_j − step(g_i)); the central reference applies it to its single
// copy.
type Optimizer struct {
	Rule         Rule
	LR           float64
	Beta1, Beta2 float64 // Adam and AMSGrad moment decays; zero means 0.9, 0.999
	Eps          float64 // zero means 1e-8
}

// ParseOptimizer maps the command-line names to a rule and whether it is the
// decentralised variant: dsgd, dadam, damsgrad, sgd, adam, amsgrad.
func ParseOptimizer(name string) (Rule, bool, error) {
	switch name {
	case "dsgd":
		return SGD, true, nil
	case "dadam":
		return Adam, true, nil
	case "damsgrad":
		return AMSGrad, true, nil
	case "sgd":
		return SGD, false, nil
	case "adam":
		return Adam, false, nil
	case "amsgrad":
		return AMSGrad, false, nil
	}
	return 0, false, fmt.Errorf("unknown optimizer %q (want dsgd, dadam, damsgrad, sgd or adam)", name)
}

// optState is one copy's optimiser memory.
type optState struct {
	cfg     Optimizer
	m, v, u []float64 // first moment, second moment, AMSGrad's running max
	t       int
}

func newOptState(cfg Optimizer, n int) *optState {
	if cfg.Beta1 == 0 {
		cfg.Beta1 = 0.9
	}
	if cfg.Beta2 == 0 {
		cfg.Beta2 = 0.999
	}
	if cfg.Eps == 0 {
		cfg.Eps = 1e-8
	}
	o := &optState{cfg: cfg}
	if cfg.Rule != SGD {
		o.m, o.v = make([]float64, n), make([]float64, n)
	}
	if cfg.Rule == AMSGrad {
		o.u = make([]float64, n)
	}
	return o
}

// step sets x = base − lr·direction(grad). base may alias x.
func (o *optState) step(x, base, grad []float64) {
	c := o.cfg
	if c.Rule == SGD {
		for i, g := range grad {
			x[i] = base[i] - c.LR*g
		}
		return
	}
	o.t++
	bc1 := 1 - math.Pow(c.Beta1, float64(o.t))
	bc2 := 1 - math.Pow(c.Beta2, float64(o.t))
	for i, g := range grad {
		o.m[i] = c.Beta1*o.m[i] + (1-c.Beta1)*g
		o.v[i] = c.Beta2*o.v[i] + (1-c.Beta2)*g*g
		v := o.v[i]
		if c.Rule == AMSGrad {
			o.u[i] = max(o.u[i], v)
			v = o.u[i]
		}
		x[i] = base[i] - c.LR*(o.m[i]/bc1)/(math.Sqrt(v/bc2)+c.Eps)
	}
}
