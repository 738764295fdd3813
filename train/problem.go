package train

import (
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
)

// Problem is a node-classification task as a whole: the graph, the node
// features and labels (negative for a node without one), and the split in
// global node ids. Trainers cut each worker's share from it.
type Problem struct {
	Graph            *graph.Graph
	Features         nn.Features
	Labels           []int32
	Train, Val, Test []int32
}
