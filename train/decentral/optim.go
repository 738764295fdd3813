package decentral

import (
	"fmt"

	"github.com/graft-gnn/graft/optim"
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
// copy. The rules are package optim's, as nn's optimisers are.
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

// config is the rule in package optim's terms; Rule's names are optim's.
func (o Optimizer) config() optim.Config {
	return optim.Config{Rule: optim.Rule(o.Rule.String()), Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps}
}

// optState is one copy's optimiser memory.
type optState struct {
	*optim.State[float64]
	lr float64
}

// newOptState returns a fresh memory for n parameters; cfg must have passed
// config().Check.
func newOptState(cfg Optimizer, n int) optState {
	return optState{optim.NewState[float64](cfg.config(), n), cfg.LR}
}

// step sets x = base − step(grad). base may alias x.
func (o optState) step(x, base, grad []float64) { o.Step(x, base, grad, o.lr, 0) }
