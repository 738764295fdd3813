package nn

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/tensor"
)

// CrossEntropy is log-softmax followed by the negative log-likelihood of the
// labels of some rows. It keeps its buffers across calls.
type CrossEntropy struct {
	grad   *tensor.Matrix // Forward's, which holds the log-probabilities first
	logp   *tensor.Matrix // Loss's, of the loss rows only
	picked *tensor.Matrix // Loss's copy of the loss rows' logits
	listed []bool         // false between calls: the rows seen while checking them
}

// Forward returns Σ_{r ∈ rows} −log softmax(logits_r)[labels[r]] / norm and
// its gradient with respect to logits (zero outside rows). labels has one
// entry per row of logits; rows must be distinct. The caller chooses norm
// so that distributed workers can divide by the global number of training
// rows and sum.
func (c *CrossEntropy) Forward(logits *tensor.Matrix, labels, rows []int32, norm float64) (float64, *tensor.Matrix, error) {
	return c.ForwardWeighted(logits, labels, rows, nil, norm)
}

// ForwardWeighted is Forward with row rows[i]'s term weighted by
// weights[i] (nil: all 1): Σ_i weights[i]·(−log softmax(logits_r)[labels[r]])
// / norm. GraphSAINT weights each node's loss by its inverse inclusion
// probability.
func (c *CrossEntropy) ForwardWeighted(logits *tensor.Matrix, labels, rows []int32, weights []float32, norm float64) (float64, *tensor.Matrix, error) {
	if err := c.check(logits, labels, rows, weights, norm); err != nil {
		return 0, nil, err
	}
	grad := ensure(&c.grad, logits.Rows, logits.Cols)
	return c.forward(logits, grad, labels, rows, weights, norm), grad, nil
}

// ForwardInPlace is Forward with the gradient written over logits, for a
// caller that reads the logits no more and whose model's Backward does not
// either (Model.OutputFree): no buffer of the logits' size of its own.
func (c *CrossEntropy) ForwardInPlace(logits *tensor.Matrix, labels, rows []int32, norm float64) (float64, error) {
	if err := c.check(logits, labels, rows, nil, norm); err != nil {
		return 0, err
	}
	return c.forward(logits, logits, labels, rows, nil, norm), nil
}

// check refuses what the loss cannot take, and marks the loss rows in
// c.listed for forward, which clears them.
func (c *CrossEntropy) check(logits *tensor.Matrix, labels, rows []int32, weights []float32, norm float64) error {
	if len(labels) != logits.Rows {
		return fmt.Errorf("nn: %d labels for %d rows of logits", len(labels), logits.Rows)
	}
	if norm <= 0 {
		return fmt.Errorf("nn: loss normaliser %v is not positive", norm)
	}
	if weights != nil && len(weights) != len(rows) {
		return fmt.Errorf("nn: %d loss weights for %d rows", len(weights), len(rows))
	}
	c.listed = ensureSlice(&c.listed, logits.Rows)
	for i, r := range rows {
		if r < 0 || int(r) >= logits.Rows {
			c.unlist(rows[:i])
			return fmt.Errorf("nn: loss row %d outside [0, %d)", r, logits.Rows)
		}
		if c.listed[r] {
			c.unlist(rows[:i])
			return fmt.Errorf("nn: loss row %d listed twice", r)
		}
		c.listed[r] = true
		if y := labels[r]; y < 0 || int(y) >= logits.Cols {
			c.unlist(rows[:i+1])
			return fmt.Errorf("nn: label %d of row %d outside [0, %d)", y, r, logits.Cols)
		}
	}
	return nil
}

func (c *CrossEntropy) unlist(rows []int32) {
	for _, r := range rows {
		c.listed[r] = false
	}
}

// forward writes the gradient into grad (which may be logits) and returns
// the loss. Only the loss rows' log-probabilities are needed (labelled
// rows are often a small part of a graph), and each becomes its row of
// the gradient in place; the other rows are zero.
func (c *CrossEntropy) forward(logits, grad *tensor.Matrix, labels, rows []int32, weights []float32, norm float64) float64 {
	defer c.unlist(rows)
	tensor.LogSoftmaxRows(grad, logits, rows)
	for r, listed := range c.listed {
		if !listed {
			clear(grad.Row(r))
		}
	}
	inv := 1 / norm
	var loss float64
	for i, r := range rows {
		y := labels[r]
		row := grad.Row(int(r)) // log-probabilities, then their gradient
		scale := inv
		if weights == nil {
			loss -= float64(row[y])
		} else {
			loss -= float64(weights[i]) * float64(row[y])
			scale *= float64(weights[i])
		}
		for j, lp := range row {
			row[j] = float32(math.Exp(float64(lp)) * scale)
		}
		row[y] -= float32(scale)
	}
	return loss * inv
}

// Loss is Forward's loss without its gradient: the same value, with
// buffers of the loss rows' size rather than the logits', for evaluation,
// whose logits may be every node's.
func (c *CrossEntropy) Loss(logits *tensor.Matrix, labels, rows []int32, norm float64) (float64, error) {
	if err := c.check(logits, labels, rows, nil, norm); err != nil {
		return 0, err
	}
	defer c.unlist(rows)
	picked := ensure(&c.picked, len(rows), logits.Cols)
	for i, r := range rows {
		copy(picked.Row(i), logits.Row(int(r)))
	}
	logp := ensure(&c.logp, len(rows), logits.Cols)
	tensor.LogSoftmax(logp, picked)
	var loss float64
	for i, r := range rows {
		loss -= float64(logp.Row(i)[labels[r]])
	}
	return loss * (1 / norm), nil
}

// Correct counts the rows whose largest logit (the first, on ties) is at
// the label. Distributed trainers sum counts, not fractions, across workers.
func Correct(logits *tensor.Matrix, labels, rows []int32) int {
	n := 0
	for _, r := range rows {
		if int32(tensor.Argmax(logits.Row(int(r)))) == labels[r] {
			n++
		}
	}
	return n
}

// MSE is the squared error Σ_{r ∈ rows} ‖pred_r − target_r‖² / norm.
type MSE struct {
	grad *tensor.Matrix
}

// Forward returns the loss and its gradient with respect to pred (zero
// outside rows; nil rows means every row).
func (m *MSE) Forward(pred, target *tensor.Matrix, rows []int32, norm float64) (float64, *tensor.Matrix, error) {
	if !pred.SameShape(target) {
		return 0, nil, fmt.Errorf("nn: prediction %s and target %s differ in shape", pred.Shape(), target.Shape())
	}
	if norm <= 0 {
		return 0, nil, fmt.Errorf("nn: loss normaliser %v is not positive", norm)
	}
	grad := ensure(&m.grad, pred.Rows, pred.Cols)
	grad.Zero()
	var loss float64
	one := func(r int) {
		p, t, g := pred.Row(r), target.Row(r), grad.Row(r)
		for j := range p {
			d := float64(p[j]) - float64(t[j])
			loss += d * d
			g[j] = float32(2 * d / norm)
		}
	}
	if rows == nil {
		for r := 0; r < pred.Rows; r++ {
			one(r)
		}
	} else {
		for _, r := range rows {
			if r < 0 || int(r) >= pred.Rows {
				return 0, nil, fmt.Errorf("nn: loss row %d outside [0, %d)", r, pred.Rows)
			}
			one(int(r))
		}
	}
	return loss / norm, grad, nil
}
