package nn

import (
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
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
// pass: GCN's aggregated input a = op·x, or SAGE's c = [op·x | x_dst], the
// aggregated input and the destinations' own rows side by side, which
// meets the stacked weights w = [W_L; W_R] in one product of twice the
// depth (c·w) where two would run, and the same in the backward pass.
type preAggregated struct {
	on         bool
	a, da, dx  *tensor.Matrix
	xbuf       *tensor.Matrix // a dense input's values under a deferred dropout
	c, w, wg   *tensor.Matrix // SAGE's [op·x | x_dst], [W_L; W_R] and its gradient
	cGradTaken bool           // c holds its own gradient (SAGE's Backward)
	task       ownRows
}

// forward computes a = op·x on g and returns it.
func (p *preAggregated) forward(g *Block, op *tensor.CSR, x Features) *tensor.Matrix {
	a := ensure(&p.a, op.Rows, x.Cols())
	p.aggregate(g, op, x, a.Columns(0, a.Cols), nil)
	return a
}

// forwardSAGE computes c = [op·x | x_dst] on g, x_dst being the first
// op.Rows rows of x (Selected.Head for Selected rows), and returns it.
func (p *preAggregated) forwardSAGE(g *Block, op *tensor.CSR, x Features) *tensor.Matrix {
	in := x.Cols()
	c := ensure(&p.c, op.Rows, 2*in)
	p.cGradTaken = false
	p.aggregate(g, op, x, c.Columns(0, in), c)
	return c
}

// aggregate sets a = op·x on g and, for own non-nil, the columns of own
// after a's to the destinations' own rows of x. Selected rows are
// gathered by op renumbered to the rows they lie in (Block.selectedOp),
// as the same sums in the same order (bf16 rows widened exactly as they
// are gathered); under a deferred dropout, each row is dropped as it is
// gathered (after its widening), by its keep bits (Block.selectedMask),
// which makes the same values as the dropped copy would hold, and the
// Head rows, which SAGE reads (float32 copies, bf16 ones widened), are
// dropped as they are copied.
func (p *preAggregated) aggregate(g *Block, op *tensor.CSR, x Features, a tensor.ColumnView, own *tensor.Matrix) {
	p.on = true
	s := x.Selected
	if s == nil {
		xv := x.values(&p.xbuf)
		tensor.SpMMCols(a, op, xv.Columns(0, xv.Cols))
		if own != nil {
			p.eachOwnRow(ownRows{c: own, x: xv})
		}
		return
	}
	at := g.selectedOp(op, s.IDs, s.From.Rows())
	switch {
	case x.drop != nil:
		m := g.selectedMask(op, &x.drop.spec, s.From.Cols())
		if x16 := s.From.BF16; x16 != nil {
			tensor.SpMMMaskedBF16Cols(a, at, x16, m)
		} else {
			tensor.SpMMMaskedCols(a, at, s.From.Dense, m)
		}
	case s.From.BF16 != nil:
		tensor.SpMMBF16Cols(a, at, s.From.BF16)
	default:
		d := s.From.Dense
		tensor.SpMMCols(a, at, d.Columns(0, d.Cols))
	}
	if own != nil {
		var spec *dropSpec
		if x.drop != nil {
			spec = &x.drop.spec
		}
		p.eachOwnRow(ownRows{c: own, x: s.Head, spec: spec, g: g})
	}
}

// ownRows is the copy of the destinations' own rows x into the columns of
// c after op·x's (dropped by spec if not nil, row i being g's node i), or,
// with add, the sum of those columns of c into x: a parallel.Task kept in
// preAggregated, so that a batch allocates no closure.
type ownRows struct {
	c, x *tensor.Matrix
	spec *dropSpec
	g    *Block
	add  bool
}

func (t *ownRows) Run(i0, i1 int) {
	lo := t.c.Cols - t.x.Cols
	for i := i0; i < i1; i++ {
		own, x := t.c.Row(i)[lo:], t.x.Row(i)
		switch {
		case t.add:
			vec.Add(x, x, own)
		case t.spec != nil:
			t.spec.apply(own, x, t.g.globalID(i))
		default:
			copy(own, x)
		}
	}
}

// eachOwnRow runs t over c's rows, then lets go of what it points to.
func (p *preAggregated) eachOwnRow(t ownRows) {
	p.task = t
	parallel.For(t.c.Rows, rowGrain(t.x.Cols), &p.task)
	p.task = ownRows{}
}

// stack returns [wl; wr] in p's buffer.
func (p *preAggregated) stack(wl, wr *tensor.Matrix) *tensor.Matrix {
	w := ensure(&p.w, wl.Rows+wr.Rows, wl.Cols)
	copy(w.Data, wl.Data)
	copy(w.Data[len(wl.Data):], wr.Data)
	return w
}

// backwardSAGE sets wlGrad and wrGrad to the gradients of c·[W_L; W_R]
// given its gradient dy (overwriting them), and, if inputGrad, returns the
// gradient of x: meanᵀ·(dy·W_Lᵀ), plus dy·W_Rᵀ on the destinations' own
// rows, from one product dy·[W_L; W_R]ᵀ, which takes c's storage (the
// backward pass does not read c again). g's transposed operator is
// built only then: a first layer takes no input gradient.
func (p *preAggregated) backwardSAGE(g *Block, prod tensor.Products, dy, wlGrad, wrGrad *tensor.Matrix, inputGrad bool) *tensor.Matrix {
	if p.cGradTaken {
		panic("nn: SAGE's aggregate-first Backward runs once per Forward")
	}
	c, w := p.c, p.w
	in := c.Cols / 2
	wg := ensure(&p.wg, w.Rows, w.Cols)
	prod.MatMulTN(wg, c, dy)
	copy(wlGrad.Data, wg.Data[:len(wlGrad.Data)])
	copy(wrGrad.Data, wg.Data[len(wlGrad.Data):])
	if !inputGrad {
		return nil
	}
	p.cGradTaken = true
	dc := c
	prod.MatMulNT(dc, dy, w)
	opT := g.meanTOp()
	dx := ensure(&p.dx, opT.Rows, in)
	tensor.SpMMCols(dx.Columns(0, in), opT, dc.Columns(0, in))
	p.eachOwnRow(ownRows{c: dc, x: dx, add: true}) // dx's first rows, the destinations'
	return dx
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
