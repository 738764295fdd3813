package nn

import "github.com/graft-gnn/graft/tensor"

// A graph convolution y = op·(x·W) can run in either order: transform
// every source and aggregate the transformed rows (what the halo exchange
// needs: it moves transformed rows), or aggregate the inputs and transform
// only the destinations, y = (op·x)·W. A sampled block has many more
// sources than destinations (a mini-batch's first layer reads hundreds of
// thousands of nodes for tens of thousands of destinations), and there the
// second order costs a fraction of the first's multiply-adds.

// aggregateFirst reports whether a layer of in inputs and out outputs runs
// on g faster by aggregating first: only for a block without a halo (whose
// exchange moves transformed rows) with more sources than destinations (a
// whole graph keeps its order, and its bits), from a dense input.
func aggregateFirst(g *Block, op *tensor.CSR, x Features, in, out int) bool {
	if g.Halo != nil || g.NumSrc <= g.NumDst || x.Dense == nil {
		return false
	}
	nnz := float64(op.NNZ())
	transformFirst := float64(g.NumSrc)*float64(in)*float64(out) + nnz*float64(out)
	aggregated := nnz*float64(in) + float64(g.NumDst)*float64(in)*float64(out)
	return aggregated < transformFirst
}

// preAggregated holds what an aggregate-first pass keeps for its backward
// pass: the aggregated input op·x, and the input's values when a deferred
// dropout had to be applied to take them.
type preAggregated struct {
	on       bool
	xv, a    *tensor.Matrix // the input's values (possibly xbuf) and op·x
	xbuf, da *tensor.Matrix
	dx       *tensor.Matrix
}

// forward computes a = op·x and returns it.
func (p *preAggregated) forward(op *tensor.CSR, x Features) *tensor.Matrix {
	p.on = true
	p.xv = x.values(&p.xbuf)
	a := ensure(&p.a, op.Rows, p.xv.Cols)
	tensor.SpMM(a, op, p.xv)
	return a
}

// inputGradient returns the gradient of x given the gradient da of op·x:
// opT·da, opT being op's transpose.
func (p *preAggregated) inputGradient(opT *tensor.CSR, da *tensor.Matrix) *tensor.Matrix {
	dx := ensure(&p.dx, opT.Rows, da.Cols)
	tensor.SpMM(dx, opT, da)
	return dx
}
