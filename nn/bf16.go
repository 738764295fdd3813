package nn

import (
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Mixed precision (SetBF16). A graph layer computes a per-node quantity of
// its input rows, has it at every source (the halo exchange brings the
// rows other workers own) and aggregates it into the destinations: GCN's
// and SAGE's x·W, GAT's z = x·W. At bf16 that quantity is rounded to
// bfloat16 for every node, in one process as in many, so that the halo
// exchange moves bf16 rows and a partitioned model computes what the
// whole-graph one does. GCN and SAGE store it in bf16 (half the bytes)
// and aggregate it with the bf16 sparse product, which widens each row
// exactly as it gathers it; GAT, whose attention reads it row by row in
// both passes, keeps the rounded values in its float32 buffer. Products,
// sums, gradients and parameters stay float32: the backward pass takes the
// rounding as the identity (the straight-through estimator every mixed
// precision scheme uses), so gradients are those of the float32 layer
// evaluated at the rounded values.

// SetBF16 makes the model's graph layers hold their per-node quantity in
// bf16 (see above) when on is set; features in bf16 (BF16Features) are
// read as they are at any setting. Full-graph training sets it for
// --precision bf16.
func (m *Model) SetBF16(on bool) {
	for _, l := range m.Layers {
		switch l := l.(type) {
		case *GCN:
			l.s16.on = on
		case *SAGE:
			l.s16.on = on
		case *GAT:
			l.round = on
		}
	}
}

// SetProducts makes every layer's matrix products in training (x·W, and
// the weight and input gradients) run at p; evaluation multiplies in
// float32 (productsFor). At tensor.BF16Products both operands are
// rounded to bfloat16 as the product packs them and the sums are float32,
// as mixed-precision training multiplies everywhere: twice float32's rate
// or more where the CPU multiplies bf16 pairs (AVX512_BF16, AMX), at the
// cost of a rounding of 2⁻⁸ relative per operand. Sparse inputs, the
// aggregations and the attention stay float32. The default is
// tensor.FP32Products.
func (m *Model) SetProducts(p tensor.Products) {
	m.products = p
	for _, l := range m.Layers {
		switch l := l.(type) {
		case *Linear:
			l.prod = p
		case *GCN:
			l.prod = p
		case *SAGE:
			l.prod = p
		case *GAT:
			l.prod = p
		}
	}
}

// Products is the precision of the model's products in training
// (SetProducts).
func (m *Model) Products() tensor.Products { return m.products }

// productsFor is the precision of a layer's products in a pass of mode:
// SetProducts' in training, float32 in evaluation. An evaluation is then
// the same sums whichever way its rows are cut (by workers, by blocks, or
// aggregated before or after the product), which rounded operands would
// make depend on the order of aggregation and product; and a saved model
// evaluates alike at either setting.
func productsFor(p tensor.Products, mode Mode) tensor.Products {
	if mode.Train {
		return p
	}
	return tensor.FP32Products
}

// BF16 reports whether SetBF16 was set (false for a model without graph
// layers, which has no projection to round).
func (m *Model) BF16() bool {
	for _, l := range m.Layers {
		switch l := l.(type) {
		case *GCN:
			return l.s16.on
		case *SAGE:
			return l.s16.on
		case *GAT:
			return l.round
		}
	}
	return false
}

// stored16 is a GCN or SAGE layer's per-node projection x·W in bf16, with
// SetBF16: the owned rows rounded as they are computed, then the halo rows
// the peers send. Like the float32 transient, it does not outlive Forward
// (Backward does not read it), so the layers of a model share one buffer.
type stored16 struct {
	on     bool
	shared **tensor.MatrixBF16
	own    *tensor.MatrixBF16
	head   tensor.MatrixBF16
}

func (s *stored16) slot() **tensor.MatrixBF16 {
	if s.shared != nil {
		return s.shared
	}
	return &s.own
}

func (s *stored16) share(buf **tensor.MatrixBF16) { s.shared = buf }

// forward computes the projection of x by w for the block g and extends
// it to every source through the halo exchange of layer.
func (s *stored16) forward(p tensor.Products, layer int, g *Block, x Features, w *tensor.Matrix) *tensor.MatrixBF16 {
	ext := ensureBF16(s.slot(), g.NumSrc, w.Cols)
	own := g.InputRows()
	s.head = tensor.MatrixBF16{Rows: own, Cols: w.Cols, Data: ext.Data[:own*w.Cols]}
	x.projectBF16(p, &s.head, w)
	if g.Halo != nil {
		g.Halo.ForwardBF16(layer, ext, own)
	}
	return ext
}

// ensureBF16 is ensure for a bf16 matrix.
func ensureBF16(buf **tensor.MatrixBF16, rows, cols int) *tensor.MatrixBF16 {
	m := *buf
	if m == nil {
		m = &tensor.MatrixBF16{}
		*buf = m
	}
	n := rows * cols
	if cap(m.Data) < n {
		was := cap(m.Data)
		m.Data = hugepage.Uint16s(growTo(was, n))[:n]
		memacct.Grown(memacct.Activations, was, cap(m.Data), 2)
	}
	m.Rows, m.Cols, m.Data = rows, cols, m.Data[:n]
	return m
}

// roundBF16 rounds every value of m to the nearest bf16, in place.
func roundBF16(m *tensor.Matrix) {
	parallel.For(m.Rows, rowGrain(m.Cols), rangeTask(func(lo, hi int) {
		row := m.Data[lo*m.Cols : hi*m.Cols]
		for j, v := range row {
			row[j] = bf16.ToFloat32(bf16.FromFloat32(v))
		}
	}))
}
