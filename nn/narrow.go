package nn

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// Hidden outputs in bfloat16 (SetBF16). A full-graph pass keeps every
// layer's output until the backward pass, a hidden-wide row per node a
// layer, which on a large graph is most of a run's memory. At bf16, in a
// pass over all layers on one block (the whole graph, or a part), the
// output of every hidden GCN or GraphSAGE layer but the last (ReLU, no
// normalisation) is rounded to bf16 after its ReLU (and the next layer's
// dropout, fused into it) and held in bf16, half its bytes. Where
// training's products run in bf16 they round it anyway, and only
// evaluation's float32 products see the difference. The float32 buffer
// the layer computed into is the one the last hidden layer computes into
// next (wide). In the backward pass each layer whose input is held writes
// its input gradient over its output's gradient, a tile of rows at a time
// (gradOverDY), once nothing reads that gradient any more, so it needs no
// input-gradient buffer. An L-layer model keeps one float32 and L − 2 bf16
// hidden-wide rows per node where it kept L − 1 float32 ones.
//
// The last hidden output stays float32: over parts its buffer is where
// the gradient runs back (gradInto), on the whole graph the layers'
// backward scratch (scratch). The ReLU's backward pass reads the signs of
// its output, saved before the rounding, which the backward pass takes
// as the identity.

// narrowable is a layer (GCN, SAGE) whose output buffer the model can
// choose, and whose Backward can write its input gradient over the
// gradient of its output.
type narrowable interface {
	outputSlot() **tensor.Matrix // where the layer's Forward computes into
	// gradOverDY makes the layer's next Backward write its input gradient
	// over its output's, through the buffer tile; nil: not.
	gradOverDY(tile **tensor.Matrix)
}

func (l *GCN) outputSlot() **tensor.Matrix      { return &l.y }
func (l *SAGE) outputSlot() **tensor.Matrix     { return &l.y }
func (l *GCN) gradOverDY(tile **tensor.Matrix)  { l.dx.tile = tile }
func (l *SAGE) gradOverDY(tile **tensor.Matrix) { l.dx.tile = tile }

// narrowing is what a model keeps for its hidden outputs in bf16.
type narrowing struct {
	on     bool           // SetBF16
	layers []narrowable   // layers[i]: layer i, or nil if it is not narrowable
	wide   *tensor.Matrix // the float32 output buffer the holding layers share
	tile   *tensor.Matrix // gradOverDY's
	held   []tensor.MatrixBF16
	data   [][]uint16      // held[i]'s storage
	pass   []outputStorage // how each layer's output is kept in the current pass
}

// outputStorage is how a pass keeps a layer's output.
type outputStorage uint8

const (
	outputFloat32 outputStorage = iota // as the layer computed it
	outputHeld                         // rounded, held in bf16; computed into wide
	outputWide                         // the last hidden layer's, computed into wide
)

// setNarrowing turns hidden outputs in bf16 on or off (SetBF16).
func (m *Model) setNarrowing(on bool) {
	n := &m.narrow
	n.on = on
	L := len(m.Layers)
	n.layers = make([]narrowable, L)
	for i, l := range m.Layers {
		n.layers[i], _ = l.(narrowable)
	}
	n.held = make([]tensor.MatrixBF16, L)
	n.data = make([][]uint16, L)
	n.pass = make([]outputStorage, L)
	if n.wide == nil {
		n.wide = &tensor.Matrix{}
	}
}

// plan decides how a pass over layers [lo, hi) on nb blocks keeps each
// layer's output, and points the layers at their buffers.
func (m *Model) plan(lo, hi, nb int) {
	n := &m.narrow
	if n.layers == nil {
		return
	}
	L := len(m.Layers)
	holding := false
	for i := range n.pass {
		n.pass[i] = outputFloat32
		if n.on && nb == 1 && i >= lo && i+2 < L && L-2 < hi && n.layers[i] != nil && n.layers[i+1] != nil &&
			n.layers[L-2] != nil && m.acts[i].Kind == ReLU && !m.Config.Normalize {
			n.pass[i] = outputHeld
			holding = true
		}
	}
	if holding {
		n.pass[L-2] = outputWide
	}
	for i := lo; i < hi; i++ {
		if i < len(m.signed) {
			m.signed[i] = false // hold, or the next layer's gradInto, sets it
		}
		l := n.layers[i]
		if l == nil {
			continue
		}
		switch slot := l.outputSlot(); {
		case n.pass[i] == outputHeld || n.pass[i] == outputWide:
			if y := *slot; y != nil && y != n.wide {
				memacct.Add(memacct.Activations, -4*int64(cap(y.Data))) // its own buffer, let go
			}
			*slot = n.wide
		case *slot == n.wide:
			*slot = nil // its own buffer again, made by its next Forward
		}
	}
}

// nextInput is layer i's output y as the next layer's input: y, or y held
// in bf16 as the pass keeps it.
func (m *Model) nextInput(i int, y *tensor.Matrix, train bool) Features {
	if n := &m.narrow; n.layers != nil && n.pass[i] == outputHeld {
		return Features{BF16: m.hold(i, y, train)}
	}
	return Features{Dense: y}
}

// hold rounds y, layer i's output, into held[i] and, in training, saves
// where it is positive for the ReLU's backward pass.
func (m *Model) hold(i int, y *tensor.Matrix, train bool) *tensor.MatrixBF16 {
	n := &m.narrow
	h := &n.held[i]
	*h = tensor.MatrixBF16{Rows: y.Rows, Cols: y.Cols, Data: ensureSlice(&n.data[i], y.Rows*y.Cols)}
	words := signWords(y.Cols)
	var bits []uint64
	if train {
		bits = ensureSlice(&m.signs[i], y.Rows*words)
	}
	parallel.For(y.Rows, rowGrain(y.Cols), rangeTask(func(lo, hi int) {
		for r := lo; r < hi && train; r++ {
			vec.SignBits(bits[r*words:(r+1)*words], y.Row(r)) // the ReLU's own output, before the rounding
		}
		bf16.Encode(h.Data[lo*y.Cols:hi*y.Cols], y.Data[lo*y.Cols:hi*y.Cols])
	}))
	m.signed[i] = train
	return h
}

// heldInput reports whether layer i's input in the last pass was layer
// i−1's output held in bf16.
func (m *Model) heldInput(i int) bool {
	return i > 0 && m.narrow.layers != nil && m.inputs[i].BF16 == &m.narrow.held[i-1]
}

// overDYTile is the float32s of a tile of gradOverDY's rows.
const overDYTile = 1 << 20

// gradOverDY writes the input gradient dh·W_hᵀ (+ dy·W_yᵀ, for a non-nil
// wy) over dy, a tile of rows at a time through the buffer tile: the rows
// of both products are the same nodes' (a full-graph layer whose input
// rows are its destinations), and no tile of dy is written before both
// products have read it.
func gradOverDY(p tensor.Products, dy, dh, wh, wy *tensor.Matrix, tile **tensor.Matrix) {
	gradOverDYTiled(p, dy, dh, wh, wy, tile, overDYTile)
}

// gradOverDYTiled is gradOverDY with tiles of about floats float32s.
func gradOverDYTiled(p tensor.Products, dy, dh, wh, wy *tensor.Matrix, tile **tensor.Matrix, floats int) {
	if dh.Rows != dy.Rows || wh.Rows != dy.Cols {
		panic(fmt.Sprintf("nn: an input gradient of %d×%d over an output gradient of %d×%d", dh.Rows, wh.Rows, dy.Rows, dy.Cols))
	}
	if wy == nil { // dy is not read: the product goes straight over it
		p.MatMulNT(dy, dh, wh)
		return
	}
	cols := dy.Cols
	step := max(1, floats/max(cols, 1))
	for lo := 0; lo < dy.Rows; lo += step {
		hi := min(lo+step, dy.Rows)
		t := ensure(tile, hi-lo, cols)
		a := tensor.Matrix{Rows: hi - lo, Cols: dh.Cols, Data: dh.Data[lo*dh.Cols : hi*dh.Cols]}
		b := tensor.Matrix{Rows: hi - lo, Cols: cols, Data: dy.Data[lo*cols : hi*cols]}
		p.MatMulNT(t, &a, wh)
		p.MatMulNTAdd(t, &b, wy)
		copy(b.Data, t.Data)
	}
}
