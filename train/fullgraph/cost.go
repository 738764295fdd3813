package fullgraph

import (
	"math"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/partition"
)

// Cost models a worker's compute time per epoch as PerNode seconds for
// every node it owns plus PerEdge seconds for every adjacency entry of
// those nodes: the dense layers' work grows with the rows, the
// aggregation's with the edges. A node then costs PerNode + PerEdge times
// its degree, the weight a re-partition balances.
type Cost struct {
	PerNode float64 `json:"seconds_per_node"`
	PerEdge float64 `json:"seconds_per_edge"`
}

// FitCost fits a Cost to the measured seconds of workers owning nodes[w]
// nodes and edges[w] adjacency entries: least squares with both
// coefficients non-negative. Where the unconstrained fit has a negative
// coefficient, or the workers' nodes and edges are proportional so that
// the two cannot be told apart, it keeps the better of the fits of one
// coefficient, edges on a tie (on skewed graphs the edges are what is
// spread unevenly).
func FitCost(nodes, edges, seconds []float64) Cost {
	var nn, ne, ee, nt, et float64
	for w := range seconds {
		n, e, t := nodes[w], edges[w], seconds[w]
		nn += n * n
		ne += n * e
		ee += e * e
		nt += n * t
		et += e * t
	}
	if det := nn*ee - ne*ne; det > 1e-9*nn*ee {
		c := Cost{PerNode: (nt*ee - et*ne) / det, PerEdge: (et*nn - nt*ne) / det}
		if c.PerNode >= 0 && c.PerEdge >= 0 {
			return c
		}
	}
	var byNode, byEdge Cost
	if nn > 0 {
		byNode.PerNode = max(nt/nn, 0)
	}
	if ee > 0 {
		byEdge.PerEdge = max(et/ee, 0)
	}
	rn, re := byNode.residual(nodes, edges, seconds), byEdge.residual(nodes, edges, seconds)
	if rn < re*(1-1e-9) {
		return byNode
	}
	return byEdge
}

// residual is the sum of squared errors of c's prediction of seconds.
func (c Cost) residual(nodes, edges, seconds []float64) float64 {
	var r float64
	for w := range seconds {
		d := c.PerNode*nodes[w] + c.PerEdge*edges[w] - seconds[w]
		r += d * d
	}
	return r
}

// Zero reports whether c predicts no time at all.
func (c Cost) Zero() bool { return !(c.PerNode > 0 || c.PerEdge > 0) }

// Predict returns the time c predicts for each part of parts (k of them)
// on g.
func (c Cost) Predict(g *graph.Graph, parts []int32, k int) []float64 {
	t := make([]float64, k)
	for v, p := range parts {
		t[p] += c.PerNode + c.PerEdge*float64(g.Degree(v))
	}
	return t
}

// maxWeightTotal bounds the sum of the integer node weights, so that the
// partitioners' sums over coarsened nodes stay far from overflowing.
const maxWeightTotal = 1 << 30

// Weights returns the integer node weights of g under c for
// partition.Options.NodeWeights: proportional to a node's cost, scaled to
// a mean of at most 1000 (and a total of at most 2^30), and at least 1, so
// that even nodes of negligible cost are spread over the parts.
func (c Cost) Weights(g *graph.Graph) []int32 {
	cost := func(v int) float64 { return c.PerNode + c.PerEdge*float64(g.Degree(v)) }
	var total float64
	for v := range g.N {
		total += cost(v)
	}
	w := make([]int32, g.N)
	if g.N == 0 || !(total > 0) {
		for v := range w {
			w[v] = 1
		}
		return w
	}
	scale := min(1000*float64(g.N), maxWeightTotal) / total
	for v := range w {
		w[v] = int32(max(1, min(math.Round(scale*cost(v)), maxWeightTotal)))
	}
	return w
}

// Imbalance is max/mean of t (1 when every value is 0).
func Imbalance(t []float64) float64 {
	var sum, mx float64
	for _, x := range t {
		sum += x
		mx = max(mx, x)
	}
	if !(sum > 0) {
		return 1
	}
	return mx / (sum / float64(len(t)))
}

// partSizes returns the owned nodes and their adjacency entries of every
// part of layout.
func partSizes(layout *partition.Layout) (nodes, edges []float64) {
	nodes, edges = make([]float64, layout.K), make([]float64, layout.K)
	for p := range layout.Parts {
		nodes[p] = float64(len(layout.Parts[p].Owned))
		edges[p] = float64(layout.Parts[p].Local.NNZ())
	}
	return nodes, edges
}
