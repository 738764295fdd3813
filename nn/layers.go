package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/graft-gnn/graft/tensor"
)

// Layer is one differentiable layer over a block: it computes a row per
// destination.
type Layer interface {
	// Forward computes the layer for g's destinations from x, which has
	// g.InputRows() rows (a row per source, or per destination when a Halo
	// brings the others). The result belongs to the layer.
	Forward(g *Block, x Features, mode Mode) *tensor.Matrix
	// Backward takes the gradient of the last Forward's output, overwrites
	// the parameter gradients, and returns the input gradient (a row per
	// input row) when inputGrad is true and the input was dense (nil
	// otherwise).
	Backward(dy *tensor.Matrix, inputGrad bool) *tensor.Matrix
	// Params lists the trainable parameters.
	Params() []*Param
}

// Linear is y = x·W + b, ignoring the graph (PyTorch's nn.Linear), for
// the block's destinations.
type Linear struct {
	Weight, Bias *Param

	x, xdst Features // the input, and its destinations' rows
	y       *tensor.Matrix
	dx      gradBuffer
	view    headView
	dxView  headView
	prod    tensor.Products // Model.SetProducts
}

// NewLinear returns a Linear layer whose parameters are named prefix.weight
// and prefix.bias, initialised by init from rng.
func NewLinear(prefix string, in, out int, init Init, rng *rand.Rand) (*Linear, error) {
	l := &Linear{Weight: newWeight(prefix+".weight", in, out), Bias: newBias(prefix+".bias", out)}
	return l, initUniform(l.Weight.Value, init, in, out, rng)
}

func (l *Linear) Params() []*Param { return []*Param{l.Weight, l.Bias} }

func (l *Linear) Forward(g *Block, x Features, mode Mode) *tensor.Matrix {
	prod := productsFor(l.prod, mode)
	checkInput("Linear", x, l.Weight)
	checkRows("Linear", g, x)
	l.x, l.xdst = x, l.view.features(x, g.NumDst)
	y := ensure(&l.y, g.NumDst, l.Weight.Value.Cols)
	l.xdst.mul(prod, y, l.Weight.Value)
	addRowVector(y, l.Bias.Value.Data)
	return y
}

func (l *Linear) Backward(dy *tensor.Matrix, inputGrad bool) *tensor.Matrix {
	biasGrad(l.Bias, dy)
	l.xdst.mulTN(l.prod, l.Weight.Grad, dy)
	if !inputGrad || l.x.Dense == nil {
		return nil
	}
	// Sources that are not destinations do not reach the output.
	dx := ensure(l.dx.slot(), l.x.Rows(), l.Weight.Value.Rows)
	l.prod.MatMulNT(l.dxView.matrix(dx, dy.Rows), dy, l.Weight.Value)
	clear(dx.Data[dy.Rows*dx.Cols:])
	return dx
}

// GCN is Kipf and Welling's graph convolution: y = Â·(x·W) + b with
// Â = D^-1/2 (A+I) D^-1/2 (PyG's GCNConv).
type GCN struct {
	Weight, Bias *Param
	index        int // position in the model: the Halo's layer argument

	g    *Block
	x    Features
	y    *tensor.Matrix
	dx   gradBuffer
	work transient
	head tensor.Matrix // the transformed input's own rows when a halo follows them
	pre  preAggregated
	s16  stored16        // the projection in bf16 (Model.SetBF16)
	prod tensor.Products // Model.SetProducts
}

// NewGCN returns a GCN layer at position index of its model with parameters
// named prefix.weight and prefix.bias.
func NewGCN(index int, prefix string, in, out int, init Init, rng *rand.Rand) (*GCN, error) {
	l := &GCN{index: index, Weight: newWeight(prefix+".weight", in, out), Bias: newBias(prefix+".bias", out)}
	return l, initUniform(l.Weight.Value, init, in, out, rng)
}

func (l *GCN) Params() []*Param { return []*Param{l.Weight, l.Bias} }

func (l *GCN) Forward(g *Block, x Features, mode Mode) *tensor.Matrix {
	prod := productsFor(l.prod, mode)
	checkInput("GCN", x, l.Weight)
	checkRows("GCN", g, x)
	l.g, l.x = g, x
	l.pre.on = false
	if l.s16.on {
		ext, op := l.s16.forward(prod, l.index, g, x, l.Weight.Value, &l.work, g.gcnOp())
		y := ensure(&l.y, g.NumDst, ext.Cols)
		tensor.SpMMBF16(y, op, ext)
		addRowVector(y, l.Bias.Value.Data)
		return y
	}
	if all, op := g.projectShared(prod, l.index, x, l.Weight.Value, g.gcnOp()); all != nil {
		y := ensure(&l.y, g.NumDst, all.Cols)
		tensor.SpMM(y, op, all)
		addRowVector(y, l.Bias.Value.Data)
		return y
	}
	if l.aggregatesFirst(g, x) {
		a := l.pre.forward(g, g.gcnOp(), x)
		y := ensure(&l.y, g.NumDst, l.Weight.Value.Cols)
		prod.MatMul(y, a, l.Weight.Value)
		addRowVector(y, l.Bias.Value.Data)
		return y
	}
	h := g.ownRows(l.work.slot(), l.work.slot(), &l.head, l.Weight.Value.Cols)
	x.mul(prod, h, l.Weight.Value)
	ext := g.extend(l.index, h, l.work.slot())
	y := ensure(&l.y, g.NumDst, h.Cols)
	tensor.SpMM(y, g.gcnOp(), ext)
	addRowVector(y, l.Bias.Value.Data)
	return y
}

func (l *GCN) Backward(dy *tensor.Matrix, inputGrad bool) *tensor.Matrix {
	g := l.g
	biasGrad(l.Bias, dy)
	if p := &l.pre; p.on {
		l.prod.MatMulTN(l.Weight.Grad, p.a, dy)
		if !inputGrad {
			return nil
		}
		da := ensure(&p.da, dy.Rows, l.Weight.Value.Rows)
		l.prod.MatMulNT(da, dy, l.Weight.Value)
		return p.inputGradient(g.gcnTOp(), da)
	}
	dext := aggregationGrad(g, l.index, l.s16.on, &l.y, &l.work, dy.Cols)
	dh := g.aggregateBackward(l.index, g.gcnTOp(), dy, dext, &l.head)
	l.x.mulTN(l.prod, l.Weight.Grad, dh)
	if inputGrad && l.dx.tile != nil {
		gradOverDY(l.prod, dy, dh, l.Weight.Value, nil, l.dx.tile)
		return dy
	}
	return inputGradient(l.prod, l.dx.slot(), l.x, dh, l.Weight, inputGrad)
}

// SAGE is GraphSAGE with the mean aggregator, as PyG's SAGEConv:
// y_i = W_r·x_i + W_l·mean_{j→i} x_j + b. The neighbour transform is applied
// before aggregating, so the halo exchange moves out-wide rows.
type SAGE struct {
	WeightL, BiasL, WeightR *Param
	index                   int

	g            *Block
	x, xdst      Features // the input, and its destinations' rows
	y            *tensor.Matrix
	dx           gradBuffer
	work         transient
	head         tensor.Matrix // the transformed input's own rows when a halo follows them
	view, dxView headView
	pre          preAggregated
	s16          stored16        // the projection in bf16 (Model.SetBF16)
	prod         tensor.Products // Model.SetProducts
}

// NewSAGE returns a SAGE layer with parameters prefix.lin_l.weight,
// prefix.lin_l.bias and prefix.lin_r.weight.
func NewSAGE(index int, prefix string, in, out int, init Init, rng *rand.Rand) (*SAGE, error) {
	l := &SAGE{index: index,
		WeightL: newWeight(prefix+".lin_l.weight", in, out),
		BiasL:   newBias(prefix+".lin_l.bias", out),
		WeightR: newWeight(prefix+".lin_r.weight", in, out)}
	if err := initUniform(l.WeightL.Value, init, in, out, rng); err != nil {
		return nil, err
	}
	return l, initUniform(l.WeightR.Value, init, in, out, rng)
}

func (l *SAGE) Params() []*Param { return []*Param{l.WeightL, l.BiasL, l.WeightR} }

func (l *SAGE) Forward(g *Block, x Features, mode Mode) *tensor.Matrix {
	prod := productsFor(l.prod, mode)
	checkInput("SAGE", x, l.WeightL)
	checkRows("SAGE", g, x)
	l.g, l.x, l.xdst = g, x, l.view.features(x, g.NumDst)
	l.pre.on = false
	if l.s16.on {
		ext, op := l.s16.forward(prod, l.index, g, x, l.WeightL.Value, &l.work, g.meanOp())
		y := ensure(&l.y, g.NumDst, ext.Cols)
		tensor.SpMMBF16(y, op, ext)
		l.xdst.mulAdd(prod, y, l.WeightR.Value)
		addRowVector(y, l.BiasL.Value.Data)
		return y
	}
	if all, op := g.projectShared(prod, l.index, x, l.WeightL.Value, g.meanOp()); all != nil {
		y := ensure(&l.y, g.NumDst, all.Cols)
		tensor.SpMM(y, op, all)
		l.xdst.mulAdd(prod, y, l.WeightR.Value)
		addRowVector(y, l.BiasL.Value.Data)
		return y
	}
	if l.aggregatesFirst(g, x) {
		if s := x.Selected; s != nil && s.Head == nil {
			panic("nn: SAGE reads Selected rows without their Head")
		}
		c := l.pre.forwardSAGE(g, g.meanOp(), x)
		w := l.pre.stack(l.WeightL.Value, l.WeightR.Value)
		y := ensure(&l.y, g.NumDst, w.Cols)
		prod.MatMul(y, c, w)
		addRowVector(y, l.BiasL.Value.Data)
		return y
	}
	h := g.ownRows(l.work.slot(), l.work.slot(), &l.head, l.WeightL.Value.Cols)
	x.mul(prod, h, l.WeightL.Value)
	ext := g.extend(l.index, h, l.work.slot())
	y := ensure(&l.y, g.NumDst, h.Cols)
	tensor.SpMM(y, g.meanOp(), ext)
	l.xdst.mulAdd(prod, y, l.WeightR.Value)
	addRowVector(y, l.BiasL.Value.Data)
	return y
}

func (l *SAGE) Backward(dy *tensor.Matrix, inputGrad bool) *tensor.Matrix {
	g := l.g
	biasGrad(l.BiasL, dy)
	if p := &l.pre; p.on {
		return p.backwardSAGE(g, l.prod, dy, l.WeightL.Grad, l.WeightR.Grad, inputGrad)
	}
	dext := aggregationGrad(g, l.index, l.s16.on, &l.y, &l.work, dy.Cols)
	dh := g.aggregateBackward(l.index, g.meanTOp(), dy, dext, &l.head)
	l.x.mulTN(l.prod, l.WeightL.Grad, dh)
	l.xdst.mulTN(l.prod, l.WeightR.Grad, dy)
	if inputGrad && l.dx.tile != nil {
		gradOverDY(l.prod, dy, dh, l.WeightL.Value, l.WeightR.Value, l.dx.tile)
		return dy
	}
	dx := inputGradient(l.prod, l.dx.slot(), l.x, dh, l.WeightL, inputGrad)
	if dx != nil {
		l.prod.MatMulNTAdd(l.dxView.matrix(dx, dy.Rows), dy, l.WeightR.Value)
	}
	return dx
}

// transient is the buffer a GCN or SAGE layer computes its transformed
// input in (with the halo rows after it) during Forward, in float32 or, at
// bf16, as bf16 values in its storage (stored16), and the gradient of its
// aggregation in during Backward. Neither outlives the call, so the
// layers of a model share one (NewModel): a hidden-wide row per source,
// which on a large graph is gigabytes a layer.
type transient struct {
	shared **tensor.Matrix
	own    *tensor.Matrix
}

func (t *transient) slot() **tensor.Matrix {
	if t.shared != nil {
		return t.shared
	}
	return &t.own
}

func (t *transient) share(buf **tensor.Matrix) { t.shared = buf }

// scratch returns the buffer that holds the gradient of a GCN or SAGE
// layer's aggregation in Backward: the transient, where the forward pass
// computed the transformed input, which Backward does not read. At bf16
// without a halo the layer's output buffer y, of the gradient's shape,
// serves instead (nothing reads the output once the backward pass reaches
// the layer), so the transient stays the size of the bf16 projection.
func scratch(g *Block, bf16 bool, y **tensor.Matrix, work *transient) **tensor.Matrix {
	if bf16 && g.Halo == nil {
		return y
	}
	return work.slot()
}

// gradBuffer is where a layer's Backward writes the gradient of its
// dense input: its own buffer, or the matrix the model handed it for the
// pass (Model.gradInto), the input's own storage, which Backward reads
// only before it writes the gradient (for the weight gradients).
type gradBuffer struct {
	own, to *tensor.Matrix
	tile    **tensor.Matrix // non-nil: write the gradient over the output's through it (gradOverDY)
}

func (b *gradBuffer) slot() **tensor.Matrix {
	if b.to != nil {
		return &b.to
	}
	return &b.own
}

func (l *Linear) gradInto(m *tensor.Matrix) { l.dx.to = m }
func (l *GCN) gradInto(m *tensor.Matrix)    { l.dx.to = m }
func (l *SAGE) gradInto(m *tensor.Matrix)   { l.dx.to = m }
func (l *GAT) gradInto(m *tensor.Matrix)    { l.dx.to = m }

// scratchesOutput reports whether the layer's next Backward takes its
// scratch from its output's buffer (scratch), which then cannot hold the
// gradient of that output (Model.gradInto).
func (l *GCN) scratchesOutput() bool  { return l.s16.on && l.g != nil && l.g.Halo == nil && !l.pre.on }
func (l *SAGE) scratchesOutput() bool { return l.s16.on && l.g != nil && l.g.Halo == nil && !l.pre.on }

// aggregationGrad returns the buffer of a GCN or SAGE layer's gradient of
// its aggregation, cols wide, in layer's backward pass: this part's rows
// of the shared buffer where the halo shares the pass and makes the halo
// rows' gradients (SharedHalo, GradientPuller), else the scratch, a row
// per source or per destination (gradRows).
func aggregationGrad(g *Block, layer int, bf16 bool, y **tensor.Matrix, work *transient, cols int) *tensor.Matrix {
	if sh := g.shared(); sh != nil && g.pulls(layer) {
		if _, own := sh.Shared(layer, cols); own != nil {
			return own
		}
	}
	return ensure(scratch(g, bf16, y, work), g.gradRows(layer, false), cols)
}

func biasGrad(b *Param, dy *tensor.Matrix) {
	sumRows(b.Grad.Data, dy)
}

// inputGradient returns dh·Wᵀ, the gradient of x·W, for dense x.
func inputGradient(p tensor.Products, buf **tensor.Matrix, x Features, dh *tensor.Matrix, w *Param, want bool) *tensor.Matrix {
	if !want || x.Dense == nil {
		return nil
	}
	dx := ensure(buf, dh.Rows, w.Value.Rows)
	p.MatMulNT(dx, dh, w.Value)
	return dx
}

func checkInput(layer string, x Features, w *Param) {
	if x.Cols() != w.Value.Rows {
		panic(fmt.Sprintf("nn: %s expects %d input features, got %d", layer, w.Value.Rows, x.Cols()))
	}
}

func checkRows(layer string, g *Block, x Features) {
	if x.Rows() != g.InputRows() {
		panic(fmt.Sprintf("nn: %s: %d input rows for a block of %d destinations and %d sources (want %d)", layer, x.Rows(), g.NumDst, g.NumSrc, g.InputRows()))
	}
}
