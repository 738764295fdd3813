package graph

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// GCNNorm returns Kipf and Welling's propagation matrix
// Â = D^-1/2 (A+I) D^-1/2, where A+I is g with every self loop present once
// and D holds the row lengths of A+I (for an undirected graph, each node's
// degree plus one). Entry (v, u) is 1/sqrt(d_v d_u).
func (g *Graph) GCNNorm() *tensor.CSR {
	withLoops := g.WithSelfLoops()
	deg := withLoops.OutDegrees()
	a, err := GCNNormWithDegrees(withLoops.Matrix(nil), deg, deg)
	if err != nil {
		panic("graph: " + err.Error()) // unreachable: every row has its self loop
	}
	return a
}

// MeanNorm returns the row-normalised adjacency of GraphSAGE's mean
// aggregator: every entry of row v is 1/deg(v); empty rows stay empty. The
// result shares g's Offsets and Neighbors.
func (g *Graph) MeanNorm() *tensor.CSR {
	a, err := MeanNormWithDegrees(g.Matrix(nil), g.OutDegrees())
	if err != nil {
		panic("graph: " + err.Error()) // unreachable: the degrees are the row lengths
	}
	return a
}

// GCNNormWithDegrees returns adj with entry (r, c) set to
// 1/sqrt(rowDeg[r] · colDeg[c]), sharing adj's Offsets and Indices.
//
// It is for adjacencies whose degrees are not their own row lengths, such as a
// partition's local block: its rows are the owned nodes, its columns the owned
// plus halo nodes, and the degrees must be the global ones (counted with the
// self loop, which adj must then contain). A node with stored entries must
// have a positive degree.
func GCNNormWithDegrees(adj *tensor.CSR, rowDeg, colDeg []int32) (*tensor.CSR, error) {
	if err := checkDegrees(adj, rowDeg); err != nil {
		return nil, err
	}
	if len(colDeg) != adj.Cols {
		return nil, fmt.Errorf("graph: %d column degrees for %d columns", len(colDeg), adj.Cols)
	}
	if err := checkUsedDegrees(adj, rowDeg, colDeg); err != nil {
		return nil, err
	}
	rowScale, colScale := invSqrt(rowDeg), invSqrt(colDeg)
	values := make([]float32, adj.NNZ())
	parallel.ForBounds(rowBounds(adj.Offsets, adj.Rows), rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for p := adj.Offsets[r]; p < adj.Offsets[r+1]; p++ {
				values[p] = float32(rowScale[r] * colScale[adj.Indices[p]])
			}
		}
	}))
	return &tensor.CSR{Rows: adj.Rows, Cols: adj.Cols, Offsets: adj.Offsets, Indices: adj.Indices, Values: values}, nil
}

// MeanNormWithDegrees returns adj with every entry of row r set to
// 1/rowDeg[r], sharing adj's Offsets and Indices. A row with entries must have
// a positive degree.
func MeanNormWithDegrees(adj *tensor.CSR, rowDeg []int32) (*tensor.CSR, error) {
	if err := checkDegrees(adj, rowDeg); err != nil {
		return nil, err
	}
	if err := checkUsedDegrees(adj, rowDeg, nil); err != nil {
		return nil, err
	}
	values := make([]float32, adj.NNZ())
	parallel.ForBounds(rowBounds(adj.Offsets, adj.Rows), rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			start, end := adj.Offsets[r], adj.Offsets[r+1]
			if start == end {
				continue
			}
			w := float32(1 / float64(rowDeg[r]))
			for p := start; p < end; p++ {
				values[p] = w
			}
		}
	}))
	return &tensor.CSR{Rows: adj.Rows, Cols: adj.Cols, Offsets: adj.Offsets, Indices: adj.Indices, Values: values}, nil
}

// checkDegrees validates adj and the length of the row degrees.
func checkDegrees(adj *tensor.CSR, rowDeg []int32) error {
	if adj == nil {
		return fmt.Errorf("graph: nil adjacency")
	}
	if err := adj.Validate(); err != nil {
		return fmt.Errorf("graph: adjacency: %w", err)
	}
	if len(rowDeg) != adj.Rows {
		return fmt.Errorf("graph: %d row degrees for %d rows", len(rowDeg), adj.Rows)
	}
	return nil
}

// checkUsedDegrees reports the first row with entries whose degree is not
// positive, and the first entry whose column degree is not (colDeg nil skips
// the columns).
func checkUsedDegrees(adj *tensor.CSR, rowDeg, colDeg []int32) error {
	for r := 0; r < adj.Rows; r++ {
		start, end := adj.Offsets[r], adj.Offsets[r+1]
		if start == end {
			continue
		}
		if rowDeg[r] <= 0 {
			return fmt.Errorf("graph: row %d has entries but degree %d", r, rowDeg[r])
		}
		if colDeg == nil {
			continue
		}
		for _, c := range adj.Indices[start:end] {
			if colDeg[c] <= 0 {
				return fmt.Errorf("graph: row %d has an entry in column %d, whose degree is %d", r, c, colDeg[c])
			}
		}
	}
	return nil
}

// invSqrt returns 1/sqrt(d) for every positive d and 0 for the rest.
func invSqrt(deg []int32) []float64 {
	scale := make([]float64, len(deg))
	for i, d := range deg {
		if d > 0 {
			scale[i] = 1 / math.Sqrt(float64(d))
		}
	}
	return scale
}
