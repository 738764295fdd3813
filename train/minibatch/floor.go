package minibatch

import (
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// The floor of an epoch is the larger of two times: moving the bytes its
// batches must gather (the input rows' features and the blocks' CSR) at
// the memory bandwidth, and doing its floating-point operations at the
// GEMM rate. A batch's share of each is counted here, as the model runs
// it; the rates come from graft bench kernels.

// blockOperator is the operator a block's layer reads.
func blockOperator(b *nn.Block) *tensor.CSR {
	ops := b.Operators()
	switch {
	case ops.GCN != nil:
		return ops.GCN
	case ops.Mean != nil:
		return ops.Mean
	}
	return ops.Loops
}

// gatheredBytes is what a batch must move to read its inputs: its input
// rows' features (dense: valueBytes a value, 4 in float32 and 2 in bf16;
// sparse: 8 an entry) and every
// block's CSR (8 bytes an offset, 8 an entry for its column and value).
func gatheredBytes(x nn.Features, valueBytes int, blocks []*nn.Block) float64 {
	var bytes float64
	if x.Sparse != nil {
		bytes = 8 * float64(x.Sparse.NNZ())
	} else {
		bytes = float64(valueBytes * x.Rows() * x.Cols())
	}
	for _, b := range blocks {
		op := blockOperator(b)
		bytes += 8*float64(op.Rows+1) + 8*float64(op.NNZ())
	}
	return bytes
}

// batchFlops estimates the floating-point operations of a training step on
// blocks (forward, then backward at twice the forward's, less the first
// layer's input gradient, which is never taken): each layer's products in
// the order it runs them (see nn's aggregateFirst), two operations a
// multiply-add.
func batchFlops(cfg nn.Config, blocks []*nn.Block, inputDense bool) float64 {
	cfg = cfg.WithDefaults()
	var total float64
	in := float64(cfg.InFeatures)
	for i := range cfg.Layers {
		b := blocks[min(i, len(blocks)-1)]
		nnz := float64(blockOperator(b).NNZ())
		dst, src := float64(b.NumDst), float64(b.NumSrc)
		out := float64(cfg.OutputWidth(i)) // what the layer outputs, and the next reads
		var f float64
		switch cfg.Model {
		case "gat":
			// Every head computes its own columns: a hidden layer's
			// output is its heads' side by side, the last layer's their
			// average.
			cols := out
			if i == cfg.Layers-1 {
				cols *= float64(cfg.OutputHeads)
			}
			f = src*in*cols + 3*nnz*cols // transform, scores and weighted sums
		default:
			transform, aggregate := src*in*out+nnz*out, nnz*in+dst*in*out
			f = transform
			if (i > 0 || inputDense) && src > dst && aggregate < transform {
				f = aggregate
			}
			if cfg.Model == "sage" {
				f += dst * in * out // the destinations' own term
			}
		}
		backward := 2 * f
		if i == 0 {
			backward = f // no input gradient
		}
		total += 2 * (f + backward)
		in = out
	}
	return total
}
