package graph

import "github.com/graft-gnn/graft/tensor"

// Graph is a directed graph on nodes 0..N-1 in CSR form: the out-neighbours
// of node v are Neighbors[Offsets[v]:Offsets[v+1]], sorted ascending. An
// undirected graph stores both directions of every edge. For message passing
// the row of v lists the nodes v aggregates from.
type Graph struct {
	N         int
	Offsets   []int64
	Neighbors []int32
}

// NumEdges is the number of stored (directed) edges.
func (g *Graph) NumEdges() int64 { return g.Offsets[g.N] }

// Degree is the number of stored neighbours of v.
func (g *Graph) Degree(v int) int { return int(g.Offsets[v+1] - g.Offsets[v]) }

// Adj returns row v's neighbours, sharing storage.
func (g *Graph) Adj(v int) []int32 { return g.Neighbors[g.Offsets[v]:g.Offsets[v+1]] }

// Matrix views g as an N×N sparse matrix with the given per-edge values (nil
// for all ones), sharing g's storage.
func (g *Graph) Matrix(values []float32) *tensor.CSR {
	return &tensor.CSR{Rows: g.N, Cols: g.N, Offsets: g.Offsets, Indices: g.Neighbors, Values: values}
}

// Validate checks the CSR invariants.
func (g *Graph) Validate() error { return g.Matrix(nil).Validate() }
