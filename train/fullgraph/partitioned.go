package fullgraph

import (
	"fmt"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
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
// global node ids), and local operators built with g's global degrees, so
// that the partitioned model computes exactly what the whole-graph model
// computes. halo connects the worker to the others (nil with one part).
func PartOf(g *graph.Graph, x nn.Features, labels []int32, train, val, test []int32, part *partition.Part, halo nn.Halo) (Data, error) {
	ops, err := localOperators(g, part)
	if err != nil {
		return Data{}, err
	}
	ids := make([]int32, 0, len(part.Owned)+len(part.Halo))
	ids = append(append(ids, part.Owned...), part.Halo...)
	lg, err := nn.NewBlock(ops, ids, halo)
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

// localOperators builds the GCN, mean and self-loop operators of part. Rows
// keep the global neighbour order, with the self loop where the global
// operator has it, so every row sums its terms in the same order as the
// whole-graph operator does.
func localOperators(g *graph.Graph, part *partition.Part) (nn.Operators, error) {
	return localOperatorsWithDegrees(part, part.ColumnDegrees(g))
}

// localOperatorsWithDegrees is localOperators with the column degrees of A+I given.
func localOperatorsWithDegrees(part *partition.Part, colDeg []int32) (nn.Operators, error) {
	local := part.Local
	own := len(part.Owned)
	withLoops := &tensor.CSR{Rows: local.Rows, Cols: local.Cols, Offsets: make([]int64, local.Rows+1),
		Indices: make([]int32, 0, local.NNZ()+local.Rows)}
	rowLen := make([]int32, local.Rows)
	for i := range local.Rows {
		v := part.Owned[i]
		row := local.Indices[local.Offsets[i]:local.Offsets[i+1]]
		rowLen[i] = int32(len(row))
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
	gcn, err := graph.GCNNormWithDegrees(withLoops, colDeg[:own], colDeg)
	if err != nil {
		return nn.Operators{}, fmt.Errorf("fullgraph: part %d: %w", part.ID, err)
	}
	mean, err := graph.MeanNormWithDegrees(local, rowLen)
	if err != nil {
		return nn.Operators{}, fmt.Errorf("fullgraph: part %d: %w", part.ID, err)
	}
	return nn.Operators{Loops: withLoops, GCN: gcn, Mean: mean}, nil
}
