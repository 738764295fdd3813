package nn

import "github.com/graft-gnn/graft/tensor"

// projector is a layer whose output on a block is an aggregation of its
// sources' projections, plus (SAGE) its destinations' own projection:
// GCN's op·(x·W) + b and SAGE's mean·(x·W_l) + x_dst·W_r + b. Evaluating a
// whole graph layer by layer, the layer before it can store every node's
// projections instead of its output: narrower when the classes are fewer
// than the hidden width.
type projector interface {
	// projections are the weights: the aggregated projection's, then the
	// destinations' own (SAGE).
	projections() []*Param
	// forwardProjected is Forward in evaluation given src, the aggregated
	// projection of g's sources, and dst, the own projection of its
	// destinations (nil for GCN).
	forwardProjected(g *Block, src, dst *tensor.Matrix) *tensor.Matrix
}

func (l *GCN) projections() []*Param { return []*Param{l.Weight} }

func (l *GCN) forwardProjected(g *Block, src, _ *tensor.Matrix) *tensor.Matrix {
	y := ensure(&l.y, g.NumDst, src.Cols)
	tensor.SpMM(y, g.gcnOp(), src)
	addRowVector(y, l.Bias.Value.Data)
	return y
}

func (l *SAGE) projections() []*Param { return []*Param{l.WeightL, l.WeightR} }

func (l *SAGE) forwardProjected(g *Block, src, dst *tensor.Matrix) *tensor.Matrix {
	y := ensure(&l.y, g.NumDst, src.Cols)
	tensor.SpMM(y, g.meanOp(), src)
	for i := range g.NumDst {
		row, own := y.Row(i), dst.Row(i)
		for j := range row {
			row[j] += own[j]
		}
	}
	addRowVector(y, l.BiasL.Value.Data)
	return y
}

// LastProjections is how many projections of its input the last layer
// aggregates (1 for GCN, 2 for SAGE), or 0 when it is not such a layer or
// storing them would not save memory: their width, the classes, is at
// least the layer's input width.
func (m *Model) LastProjections() int {
	last := len(m.Layers) - 1
	p, ok := m.Layers[last].(projector)
	if !ok || last == 0 {
		return 0
	}
	w := p.projections()
	if len(w)*w[0].Value.Cols >= w[0].Value.Rows {
		return 0
	}
	return len(w)
}

// ProjectForLast sets out[i] to x·W_i for the last layer's projections
// (LastProjections of them), x being rows of its input: the output of the
// layer before it.
func (m *Model) ProjectForLast(x *tensor.Matrix, out []*tensor.Matrix) {
	for i, w := range m.Layers[len(m.Layers)-1].(projector).projections() {
		tensor.MatMul(out[i], x, w.Value)
	}
}

// ForwardLastProjected is ForwardLayer of the last layer in evaluation,
// given the projections of its input (ProjectForLast): src, the first
// projection's rows of g's sources, and dst, the second's of its
// destinations (nil with one projection). The last layer has no dropout
// in evaluation and no activation after it.
func (m *Model) ForwardLastProjected(g *Block, src, dst *tensor.Matrix) *tensor.Matrix {
	return m.Layers[len(m.Layers)-1].(projector).forwardProjected(g, src, dst)
}
