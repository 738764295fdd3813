package fullgraph

import (
	"fmt"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
)

// The halo exchange shares the in-process group's memory and has the
// peers make the gradients they read, where it can.
var (
	_ nn.SharedHalo     = (*halo.Exchange)(nil)
	_ nn.GradientPuller = (*halo.Exchange)(nil)
)

// PartOf returns the Data the worker holding part trains on: its owned rows
// of the global features x and labels, its share of the split (given in
// global node ids), and the local operators that a model aggregating as agg
// reads (sample.AggregationOf), built with g's global degrees, so that the
// partitioned model computes exactly what the whole-graph model computes.
// halo connects the worker to the others (nil with one part).
func PartOf(g *graph.Graph, x nn.Features, labels []int32, train, val, test []int32, part *partition.Part, agg sample.Aggregation, halo nn.Halo) (Data, error) {
	return partData(g, x, labels, train, val, test, part, operatorsOf(agg), halo)
}

// partData is PartOf building the operators set names.
func partData(g *graph.Graph, x nn.Features, labels []int32, train, val, test []int32, part *partition.Part, set operatorSet, halo nn.Halo) (Data, error) {
	lg, err := partBlock(part, part.ColumnDegrees(g), set, halo)
	if err != nil {
		return Data{}, err
	}
	d := Data{Block: lg, Labels: make([]int32, len(part.Owned))}
	for i, v := range part.Owned {
		d.Labels[i] = labels[v]
	}
	d.Features = partstore.OwnedFeatures(x, part.Owned)
	d.Train, d.Val, d.Test = partstore.LocalRows(train, part.Owned), partstore.LocalRows(val, part.Owned), partstore.LocalRows(test, part.Owned)
	return d, nil
}

// partBlock is part's block, with the operators of set built for it (and
// counted in the memory account: nn.Block.HoldOperators) and its sources
// the owned nodes, then the halo.
func partBlock(part *partition.Part, colDeg []int32, set operatorSet, halo nn.Halo) (*nn.Block, error) {
	ops, built, err := localOperators(part, colDeg, set)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(part.Owned)+len(part.Halo))
	ids = append(append(ids, part.Owned...), part.Halo...)
	lg, err := nn.NewBlock(ops, ids, halo)
	if err != nil {
		return nil, err
	}
	lg.HoldOperators(built)
	return lg, nil
}

// operatorSet is which of a part's operators to build.
type operatorSet struct{ loops, gcn, mean bool }

// allOperators builds every operator, whatever the model reads.
var allOperators = operatorSet{loops: true, gcn: true, mean: true}

// operatorsOf is the set a model aggregating as agg reads: GCN's operator
// (whose pattern serves as the self-loop adjacency), the mean alone
// (GraphSAGE, and the MLP, which reads none but whose block takes its
// shape from one), or the self-loop pattern alone (GAT). On a large graph
// each operator is hundreds of megabytes a part.
func operatorsOf(agg sample.Aggregation) operatorSet {
	switch agg {
	case sample.GCN:
		return operatorSet{gcn: true}
	case sample.Attention:
		return operatorSet{loops: true}
	}
	return operatorSet{mean: true}
}

// localOperators builds the operators of part that set names, with colDeg
// the column degrees of A+I. Rows keep the global neighbour order, with
// the self loop where the global operator has it, so every row sums its
// terms in the same order as the whole-graph operator does. GCN shares the
// self-loop adjacency's offsets and indices, and Loops is set only when
// GCN is not (nn.Block then reads GCN's pattern). built is the bytes of
// what it allocated: the mean shares the part's adjacency's pattern.
func localOperators(part *partition.Part, colDeg []int32, set operatorSet) (ops nn.Operators, built int64, err error) {
	local := part.Local
	own := len(part.Owned)
	if set.loops || set.gcn {
		withLoops := selfLoops(part)
		built += 8*int64(cap(withLoops.Offsets)) + 4*int64(cap(withLoops.Indices))
		if set.gcn {
			gcn, err := graph.GCNNormWithDegrees(withLoops, colDeg[:own], colDeg)
			if err != nil {
				return nn.Operators{}, 0, fmt.Errorf("fullgraph: part %d: %w", part.ID, err)
			}
			ops.GCN = gcn
			built += 4 * int64(cap(gcn.Values))
		}
		if set.loops {
			ops.Loops = withLoops
		}
	}
	if set.mean {
		rowLen := make([]int32, local.Rows)
		for i := range rowLen {
			rowLen[i] = int32(local.Offsets[i+1] - local.Offsets[i])
		}
		mean, err := graph.MeanNormWithDegrees(local, rowLen)
		if err != nil {
			return nn.Operators{}, 0, fmt.Errorf("fullgraph: part %d: %w", part.ID, err)
		}
		ops.Mean = mean
		built += 4 * int64(cap(mean.Values))
	}
	return ops, built, nil
}

// selfLoops is part's local adjacency with the self loop inserted in every
// row where the global A+I has it.
func selfLoops(part *partition.Part) *tensor.CSR {
	local := part.Local
	withLoops := &tensor.CSR{Rows: local.Rows, Cols: local.Cols, Offsets: make([]int64, local.Rows+1),
		Indices: make([]int32, 0, local.NNZ()+local.Rows)}
	for i := range local.Rows {
		v := part.Owned[i]
		row := local.Indices[local.Offsets[i]:local.Offsets[i+1]]
		inserted := false
		for _, c := range row {
			gc := part.Global(c)
			if gc == v {
				inserted = true
			} else if !inserted && gc > v {
				withLoops.Indices = append(withLoops.Indices, int32(i))
				inserted = true
			}
			withLoops.Indices = append(withLoops.Indices, c)
		}
		if !inserted {
			withLoops.Indices = append(withLoops.Indices, int32(i))
		}
		withLoops.Offsets[i+1] = int64(len(withLoops.Indices))
	}
	return withLoops
}
