package sample

import (
	"math"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// layer is one block of a batch and the storage it reuses.
type layer struct {
	block nn.Block
	src   []int32    // global ids of the sources, the destinations first
	op    tensor.CSR // the operator the aggregation reads
	start []int64    // per destination: where its picked sources begin
	pick  []int32    // global ids of the picked sources, by destination
	vals  []float32  // their operator values (GCN, Mean)
}

// degrees holds, per node of the graph, what normalisation reads: 1/√d̂
// for the GCN operator, where d̂ counts the node's entries in A+I.
type degrees struct {
	invSqrt []float64
}

func newDegrees(g *graph.Graph) degrees {
	d := degrees{invSqrt: make([]float64, g.N)}
	for v := range g.N {
		n := g.Degree(v)
		if !hasSelfLoop(g, int32(v)) {
			n++
		}
		d.invSqrt[v] = 1 / math.Sqrt(float64(n))
	}
	return d
}

// hasSelfLoop reports whether v's sorted adjacency holds v.
func hasSelfLoop(g *graph.Graph, v int32) bool {
	for _, u := range g.Adj(int(v)) {
		if u >= v {
			return u == v
		}
	}
	return false
}

// candidates returns the neighbours a destination v may draw: for GCN and
// attention, every neighbour but v itself (its self loop is always kept);
// for the mean, v's row as the whole-graph mean operator reads it.
func candidates(g *graph.Graph, v int32, agg Aggregation) (adj []int32, skip int) {
	adj = g.Adj(int(v))
	if agg == Mean {
		return adj, -1
	}
	for i, u := range adj {
		if u >= v {
			if u == v {
				return adj, i
			}
			break
		}
	}
	return adj, -1
}

// build makes l the block whose destinations are dst (global ids) and whose
// other sources are the nodes picked for them, l.pick[l.start[i]:
// l.start[i+1]] for destination i, with operator values l.vals (GCN, Mean)
// and, for GCN, the self loop's value selfVal(i). local is scratch of one
// int32 per node of the graph, all zero, and left so.
func (l *layer) build(dst []int32, agg Aggregation, selfVal func(i int) float32, local []int32) error {
	l.src = append(l.src[:0], dst...)
	for i, v := range dst {
		local[v] = int32(i) + 1
	}
	self := agg != Mean // GCN and attention rows hold the destination itself
	n, picked := len(dst), len(l.pick)
	rows := picked
	if self {
		rows += n
	}
	op := l.shape(n, rows, agg)
	at := int64(0)
	op.Offsets[0] = 0
	for i := range n {
		if self {
			op.Indices[at] = int32(i)
			if op.Values != nil {
				op.Values[at] = selfVal(i)
			}
			at++
		}
		for p := l.start[i]; p < l.start[i+1]; p++ {
			u := l.pick[p]
			if local[u] == 0 {
				l.src = append(l.src, u)
				local[u] = int32(len(l.src))
			}
			op.Indices[at] = local[u] - 1
			if op.Values != nil {
				op.Values[at] = l.vals[p]
			}
			at++
		}
		op.Offsets[i+1] = at
	}
	for _, u := range l.src {
		local[u] = 0
	}
	return l.reset(agg)
}

// shape sizes l.op for rows destinations and nnz entries, with values
// unless agg reads only the pattern, and returns it.
func (l *layer) shape(rows, nnz int, agg Aggregation) *tensor.CSR {
	op := &l.op
	op.Rows, op.Offsets = rows, growTo(op.Offsets, rows+1)
	op.Indices = growTo(op.Indices, nnz)
	if agg == Attention {
		op.Values = nil
	} else {
		op.Values = growTo(op.Values, nnz)
	}
	return op
}

// reset makes l.block the block of l.op, the operator agg reads, over the
// sources l.src.
func (l *layer) reset(agg Aggregation) error {
	op := &l.op
	op.Cols = len(l.src)
	var ops nn.Operators
	switch agg {
	case GCN:
		ops.GCN = op
	case Mean:
		ops.Mean = op
	case Attention:
		ops.Loops = op
	}
	return l.block.Reset(ops, l.src)
}

// growTo returns s with length n, reusing its storage when large enough.
func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
