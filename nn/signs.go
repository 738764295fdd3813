package nn

import (
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// A hidden layer's output, after a ReLU applied in place (with the next
// layer's dropout fused in, or none), is the next layer's input, which
// that layer's Backward reads for its weight gradients and then no more;
// the ReLU's backward pass needs only where the output is positive. So
// the next layer writes its input gradient over its input (gradInto),
// once the ReLU has kept the signs as bits (saveSigns): the input
// gradient, a hidden-wide row per node, takes no buffer of its own.

// layerBackward runs layer i's Backward on d, the gradient of its output,
// writing its input gradient over its input where gradInto allows.
func (m *Model) layerBackward(i, lo int, d *tensor.Matrix) *tensor.Matrix {
	l := m.Layers[i]
	if i > lo && m.heldInput(i) {
		n := m.narrow.layers[i]
		n.gradOverDY(&m.narrow.tile)
		defer n.gradOverDY(nil)
		return l.Backward(d, true)
	}
	if t, ok := l.(interface{ gradInto(*tensor.Matrix) }); ok {
		if into := m.gradInto(i, lo); into != nil {
			t.gradInto(into)
			defer t.gradInto(nil)
		}
	}
	return l.Backward(d, i > 0)
}

// gradInto returns the matrix layer i's Backward may write its input
// gradient into: its input's own storage, when that input is activation
// i−1's output, ReLU'd in place, after saving where it is positive, which
// is all activation i−1's backward pass then reads. nil otherwise: for the
// first layer of a range, whose input gradient the range returns, and
// where layer i−1's Backward takes its scratch from its output (scratch).
// Such an input never carries a deferred dropout (Features.drop): inside
// a training range, layer i's dropout is fused into the ReLU
// (actReLUDropInPlace), or there is none (p = 0), or the normalisation
// comes between, whose output is not the ReLU's
// (TestReLUOutputInputHasNoDeferredDropout).
func (m *Model) gradInto(i, lo int) *tensor.Matrix {
	if i <= lo {
		return nil
	}
	k := i - 1
	if mode := m.actModes[k]; mode != actReLUInPlace && mode != actReLUDropInPlace {
		return nil
	}
	x, y := m.inputs[i], m.actOuts[k]
	if x.Dense != y || x.Sparse != nil || x.BF16 != nil {
		return nil
	}
	if s, ok := m.Layers[k].(interface{ scratchesOutput() bool }); ok && s.scratchesOutput() {
		return nil // layer k's Backward writes over its output, which would hold its gradient
	}
	saveSigns(&m.signs[k], y)
	m.signed[k] = true
	return y
}

// signWords is the number of 64-bit words of sign bits a row of cols
// values takes: rows start on a word, so that rows set in parallel never
// share one.
func signWords(cols int) int { return (cols + 63) / 64 }

// saveSigns sets *buf to a bit per element of y, set where it is positive.
func saveSigns(buf *[]uint64, y *tensor.Matrix) {
	words := signWords(y.Cols)
	bits := ensureSlice(buf, y.Rows*words)
	parallel.For(y.Rows, rowGrain(y.Cols), rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			vec.SignBits(bits[r*words:(r+1)*words], y.Row(r))
		}
	}))
}

// reluBackwardSigns is ReLU's backward pass in place on dy from the sign
// bits of its output: dy where the output was positive, +0 elsewhere (as
// vec.ReLUBackward), then, with scaled set, times scale (a fused
// dropout's).
func reluBackwardSigns(dy *tensor.Matrix, signs []uint64, scale float32, scaled bool) {
	words := signWords(dy.Cols)
	if !scaled {
		scale = 1 // dy·1 is dy
	}
	parallel.For(dy.Rows, rowGrain(dy.Cols), rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			vec.KeepByBits(dy.Row(r), signs[r*words:(r+1)*words], scale)
		}
	}))
}
