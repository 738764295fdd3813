package sample

import "github.com/graft-gnn/graft/graph"

// Neighborhoods makes blocks of whole neighbourhoods: the blocks of
// layer-wise inference, which computes one layer's output for every node,
// a slice of destinations at a time, before the next layer. Evaluation is
// then exact, whatever sampler trained the model.
type Neighborhoods struct{ n *Neighbor }

// NewNeighborhoods returns the neighbourhoods of g as a model aggregating
// by agg reads them.
func NewNeighborhoods(g *graph.Graph, agg Aggregation) *Neighborhoods {
	return &Neighborhoods{n: NewNeighbor(Config{Graph: g, Layers: 1, Aggregation: agg}, []int{-1})}
}

// Block fills b with one block whose destinations are dst and whose
// sources are dst and then all their other neighbours; b.Input lists the
// sources' global ids.
func (f *Neighborhoods) Block(dst []int32, b *Batch) error {
	b.prepare(1, f.n.cfg.Graph.N)
	if err := f.n.layer(&b.layers[0], dst, -1, 0, b.local); err != nil {
		return err
	}
	b.finish(dst)
	b.Loss, b.Weight = b.Loss[:0], nil
	return nil
}
