package nn

import (
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

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
// whole graph keeps its order, and its bits), from a dense input (or
// Selected rows of one).
func aggregateFirst(g *Block, op *tensor.CSR, x Features, in, out int) bool {
	if g.Halo != nil || g.NumSrc <= g.NumDst || x.Dense == nil && x.Selected == nil {
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

// forward computes a = op·x on g and returns it. Selected rows are
// gathered by op renumbered to the rows they lie in (Block.selectedOp), as
// the same sums in the same order (bf16 rows widened exactly as they are
// gathered); under a deferred dropout, each row is dropped as it is
// gathered (after its widening), by its keep bits (Block.selectedMask),
// which makes the same values as the dropped copy would hold, and the
// Head rows, which SAGE reads (float32 copies, bf16 ones widened), are
// dropped into xbuf.
func (p *preAggregated) forward(g *Block, op *tensor.CSR, x Features) *tensor.Matrix {
	p.on = true
	if s := x.Selected; s != nil {
		p.xv = s.Head
		a := ensure(&p.a, op.Rows, s.From.Cols())
		at := g.selectedOp(op, s.IDs, s.From.Rows())
		switch {
		case x.drop != nil:
			m := g.selectedMask(op, &x.drop.spec, s.From.Cols())
			if x16 := s.From.BF16; x16 != nil {
				tensor.SpMMMaskedBF16(a, at, x16, m)
			} else {
				tensor.SpMMMasked(a, at, s.From.Dense, m)
			}
			if h := s.Head; h != nil {
				p.xv = ensure(&p.xbuf, h.Rows, h.Cols)
				spec := &x.drop.spec
				parallel.For(h.Rows, rowGrain(h.Cols), rangeTask(func(lo, hi int) {
					for i := lo; i < hi; i++ {
						spec.apply(p.xv.Row(i), h.Row(i), g.globalID(i))
					}
				}))
			}
		case s.From.BF16 != nil:
			tensor.SpMMBF16(a, at, s.From.BF16)
		default:
			tensor.SpMM(a, at, s.From.Dense)
		}
		return a
	}
	p.xv = x.values(&p.xbuf)
	a := ensure(&p.a, op.Rows, p.xv.Cols)
	tensor.SpMM(a, op, p.xv)
	return a
}

// selectedReader is a layer that reads Selected input rows where they
// lie on the blocks where it aggregates its input first.
type selectedReader interface {
	aggregatesFirst(g *Block, x Features) bool
	readsHead() bool // it reads its destinations' own rows, Selected.Head
}

func (l *GCN) readsHead() bool  { return false }
func (l *SAGE) readsHead() bool { return true }

// A layer holding its projection in bf16 (SetBF16) transforms first.
func (l *GCN) aggregatesFirst(g *Block, x Features) bool {
	return !l.s16.on && aggregateFirst(g, g.gcnOp(), x, l.Weight.Value.Rows, l.Weight.Value.Cols)
}

func (l *SAGE) aggregatesFirst(g *Block, x Features) bool {
	return !l.s16.on && aggregateFirst(g, g.meanOp(), x, l.WeightL.Value.Rows, l.WeightL.Value.Cols)
}

// inputGradient returns the gradient of x given the gradient da of op·x:
// opT·da, opT being op's transpose.
func (p *preAggregated) inputGradient(opT *tensor.CSR, da *tensor.Matrix) *tensor.Matrix {
	dx := ensure(&p.dx, opT.Rows, da.Cols)
	tensor.SpMM(dx, opT, da)
	return dx
}
