package train

import (
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// Problem is a node-classification task as a whole: the graph, the node
// features and labels (negative for a node without one), and the split in
// global node ids. Trainers cut each worker's share from it.
type Problem struct {
	Graph    *graph.Graph
	Features nn.Features
	// FeaturesBF16, when set, holds the dense features in bfloat16 in
	// place of Features, which is then empty (WithBF16Features): the
	// mini-batch trainer at bf16 precision reads it, the others refuse it.
	FeaturesBF16 *tensor.MatrixBF16
	// WillRead, when set, is told the feature rows a mini-batch gather is
	// about to read, before it reads them: features mapped from a file
	// ask the kernel to read their pages ahead. It may be called from
	// several goroutines at once.
	WillRead         func(rows []int32)
	Labels           []int32
	Train, Val, Test []int32
}
