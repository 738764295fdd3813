package nn

import (
	"unsafe"

	"github.com/graft-gnn/graft/internal/bf16"
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
// bf16 (see above), and full-graph passes hold the hidden outputs before
// the last in bf16 (narrow.go), when on is set; features in bf16
// (BF16Features) are read as they are at any setting. Full-graph training sets it for
// --precision bf16.
func (m *Model) SetBF16(on bool) {
	m.setNarrowing(on)
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
// or more where the CPU's bf16 instructions outpace its float32 ones (AMX,
// AVX512_BF16 on AMD's cores: gemm.BF16Hardware), at the cost of a
// rounding of 2⁻⁸ relative per operand; elsewhere they stay float32. Sparse inputs, the
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
// the peers send. Like the float32 projection, it does not outlive Forward
// (Backward does not read it), so it lives in the layer's transient, which
// the layers of a model share and whose Backward takes the float32
// gradient of the aggregation there: one buffer serves both passes, where
// two would hold a bf16 row per source for the forward pass beside a
// float32 one for the backward pass.
type stored16 struct {
	on   bool
	ext  tensor.MatrixBF16 // the transient's storage viewed as bf16
	head tensor.MatrixBF16
}

// forward computes the projection of x by w for the block g into work and
// extends it to every source through the halo exchange of layer, and
// returns it with op, the operator that aggregates it; or, where the
// halo shares the pass, every part's projection in the shared buffer
// with op renumbered to its rows (SharedHalo).
func (s *stored16) forward(p tensor.Products, layer int, g *Block, x Features, w *tensor.Matrix, work *transient, op *tensor.CSR) (*tensor.MatrixBF16, *tensor.CSR) {
	if sh := g.shared(); sh != nil {
		if all, own := sh.SharedBF16(layer, w.Cols); all != nil {
			x.projectBF16(p, own, w)
			sh.Written(layer)
			return all, g.sharedOp(op, sh.SourceRows(), all.Rows)
		}
	}
	ext := viewBF16(work.slot(), &s.ext, g.NumSrc, w.Cols, g.gradRows(layer, true))
	own := g.InputRows()
	s.head = tensor.MatrixBF16{Rows: own, Cols: w.Cols, Data: ext.Data[:own*w.Cols]}
	x.projectBF16(p, &s.head, w)
	if g.Halo != nil {
		g.Halo.ForwardBF16(layer, ext, own)
	}
	return ext, op
}

// viewBF16 returns the storage of the float32 buffer *buf as a rows×cols
// bf16 matrix, in view, growing *buf as ensure does, to hold back rows of
// cols float32s too if they are more: the rows of the gradient that the
// backward pass computes in the same buffer (scratch, Block.gradRows).
// Growing it now, to the size both passes need, saves the eighth to spare
// that growing it in the backward pass would add.
func viewBF16(buf **tensor.Matrix, view *tensor.MatrixBF16, rows, cols, back int) *tensor.MatrixBF16 {
	n := rows * cols
	f := ensure(buf, 1, max((n+1)/2, back*cols))
	*view = tensor.MatrixBF16{Rows: rows, Cols: cols}
	if n > 0 {
		view.Data = unsafe.Slice((*uint16)(unsafe.Pointer(&f.Data[0])), n)
	}
	return view
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
