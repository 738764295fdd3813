package decentral

// LocalLoss is one node's term f_i of a sample's loss Σ_i f_i. It holds only
// that node's data (its target, the gains it measured), so handing it to an
// agent gives the agent nothing it could not observe itself.
type LocalLoss interface {
	// Coupled reports whether f_i reads the neighbours' outputs, as the
	// sum-rate does through interference. A coupled loss costs one more
	// round forward (outputs) and one backward (their partials).
	Coupled() bool
	// Eval returns f_i and its partial derivatives with respect to node i's
	// own output and, when coupled, each neighbour's output in neighbour
	// order. nbrs is nil when not coupled; a nil entry is a lost message.
	Eval(own []float64, nbrs [][]float64) (loss float64, dOwn []float64, dNbrs [][]float64)
}

// Sample is one graph signal: the shift operator the network sees, every
// node's input features (N×Dims[0], row-major) and every node's loss term.
type Sample struct {
	Shift *Shift
	X     []float64
	Loss  []LocalLoss
}

// SquaredError is f_i = ‖y_i − target‖², the regression loss.
type SquaredError struct{ Target []float64 }

func (SquaredError) Coupled() bool { return false }

func (s SquaredError) Eval(own []float64, _ [][]float64) (float64, []float64, [][]float64) {
	loss, d := 0.0, make([]float64, len(own))
	for j, y := range own {
		r := y - s.Target[j]
		loss += r * r
		d[j] = 2 * r
	}
	return loss, d, nil
}

// Linear is f_i = Σ_j Coef_j y_ij: a surrogate whose gradient is a given
// signal, as in policy gradients where the environment's reward decides it.
type Linear struct{ Coef []float64 }

func (Linear) Coupled() bool { return false }

func (l Linear) Eval(own []float64, _ [][]float64) (float64, []float64, [][]float64) {
	loss := 0.0
	for j, y := range own {
		loss += l.Coef[j] * y
	}
	return loss, append([]float64(nil), l.Coef...), nil
}
