package nn

import (
	"math"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// normEps bounds the norm RowL2Norm divides by, as PyTorch's F.normalize
// does, so a zero row stays zero instead of becoming NaN.
const normEps = 1e-12

// RowL2Norm scales every row to unit Euclidean length: y = x / max(‖x‖, ε).
// GraphSAGE applies it to every hidden layer's output (Hamilton et al.,
// 2017, Algorithm 1, line 7). It is row-local, so a partition computes it
// without any exchange.
type RowL2Norm struct {
	y, dx *tensor.Matrix
	inv   []float32 // 1 / max(‖x_i‖, ε) of the last Forward
}

// Forward returns the normalised rows of x; x is not changed.
func (n *RowL2Norm) Forward(x *tensor.Matrix) *tensor.Matrix {
	y := ensure(&n.y, x.Rows, x.Cols)
	n.inv = ensureSlice(&n.inv, x.Rows)
	inv := n.inv
	parallel.For(x.Rows, rowGrain(x.Cols), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr, yr := x.Row(i), y.Row(i)
			norm := math.Sqrt(float64(vec.Dot(xr, xr)))
			s := float32(1 / max(norm, normEps))
			inv[i] = s
			copy(yr, xr)
			vec.Scale(s, yr)
		}
	}))
	return y
}

// Backward returns the gradient of Forward's input:
// dx = (dy − y·(y⋅dy)) / ‖x‖, or dy/ε for a row whose norm was below ε.
func (n *RowL2Norm) Backward(dy *tensor.Matrix) *tensor.Matrix {
	dx := ensure(&n.dx, dy.Rows, dy.Cols)
	y, inv := n.y, n.inv
	parallel.For(dy.Rows, rowGrain(dy.Cols), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dyr, dxr, yr := dy.Row(i), dx.Row(i), y.Row(i)
			copy(dxr, dyr)
			if inv[i] < 1/normEps { // the norm was at least ε
				vec.Axpy(-vec.Dot(yr, dyr), yr, dxr)
			}
			vec.Scale(inv[i], dxr)
		}
	}))
	return dx
}
