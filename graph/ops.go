package graph

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/graft-gnn/graft/internal/parallel"
)

// OutDegrees returns the length of every row.
func (g *Graph) OutDegrees() []int32 {
	deg := make([]int32, g.N)
	parallel.For(g.N, rowGrain, rangeTask(func(lo, hi int) {
		for v := lo; v < hi; v++ {
			deg[v] = int32(g.Offsets[v+1] - g.Offsets[v])
		}
	}))
	return deg
}

// InDegrees returns how many rows list each node, the row lengths of the
// transpose.
func (g *Graph) InDegrees() []int32 {
	deg := make([]int32, g.N)
	parallel.For(len(g.Neighbors), edgeGrain, rangeTask(func(lo, hi int) {
		for _, u := range g.Neighbors[lo:hi] {
			atomic.AddInt32(&deg[u], 1)
		}
	}))
	return deg
}

// Transpose returns the graph with every edge reversed: row u of the result
// lists the nodes whose rows contain u.
func (g *Graph) Transpose() *Graph {
	return scatterBuild(g.N, g.rowBounds(), func(lo, hi int, emit func(s, d int32)) {
		for v := lo; v < hi; v++ {
			for _, u := range g.Adj(v) {
				emit(u, int32(v))
			}
		}
	}, false)
}

// Symmetrize returns the union of g and its transpose.
func (g *Graph) Symmetrize() *Graph {
	return scatterBuild(g.N, g.rowBounds(), func(lo, hi int, emit func(s, d int32)) {
		for v := lo; v < hi; v++ {
			for _, u := range g.Adj(v) {
				emit(int32(v), u)
				if u != int32(v) {
					emit(u, int32(v))
				}
			}
		}
	}, true)
}

// IsSymmetric reports whether every edge (u, v) has its reverse (v, u).
func (g *Graph) IsSymmetric() bool {
	var asymmetric atomic.Bool
	parallel.ForBounds(g.rowBounds(), rangeTask(func(lo, hi int) {
		for v := lo; v < hi && !asymmetric.Load(); v++ {
			for _, u := range g.Adj(v) {
				if _, found := slices.BinarySearch(g.Adj(int(u)), int32(v)); !found {
					asymmetric.Store(true)
					return
				}
			}
		}
	}))
	return !asymmetric.Load()
}

// HasEdge reports whether row u lists v.
func (g *Graph) HasEdge(u, v int32) bool {
	_, found := slices.BinarySearch(g.Adj(int(u)), v)
	return found
}

// WithSelfLoops returns g with (v, v) present exactly once in every row.
func (g *Graph) WithSelfLoops() *Graph {
	return mapRows(g.N, func(v int) int {
		if g.HasEdge(int32(v), int32(v)) {
			return g.Degree(v)
		}
		return g.Degree(v) + 1
	}, func(v int, out []int32) {
		row := g.Adj(v)
		i, found := slices.BinarySearch(row, int32(v))
		if found {
			copy(out, row)
			return
		}
		copy(out, row[:i])
		out[i] = int32(v)
		copy(out[i+1:], row[i:])
	}, false)
}

// WithoutSelfLoops returns g with every (v, v) removed.
func (g *Graph) WithoutSelfLoops() *Graph {
	return mapRows(g.N, func(v int) int {
		if g.HasEdge(int32(v), int32(v)) {
			return g.Degree(v) - 1
		}
		return g.Degree(v)
	}, func(v int, out []int32) {
		row := g.Adj(v)
		i, found := slices.BinarySearch(row, int32(v))
		copy(out, row[:i])
		if found {
			i++
		}
		copy(out[i-len(row)+len(out):], row[i:])
	}, false)
}

// InducedSubgraph returns the subgraph on the given distinct nodes, which
// become nodes 0..len(nodes)-1 in the order given: newToOld is a copy of
// nodes, and oldToNew maps every node of g to its new id or -1 if it is not in
// the subgraph. Only edges with both ends in nodes are kept.
func (g *Graph) InducedSubgraph(nodes []int32) (sub *Graph, newToOld, oldToNew []int32, err error) {
	oldToNew = make([]int32, g.N)
	for i := range oldToNew {
		oldToNew[i] = -1
	}
	for i, v := range nodes {
		if v < 0 || int(v) >= g.N {
			return nil, nil, nil, fmt.Errorf("graph: induced subgraph node %d is %d, outside [0, %d)", i, v, g.N)
		}
		if oldToNew[v] >= 0 {
			return nil, nil, nil, fmt.Errorf("graph: induced subgraph nodes %d and %d are both %d", oldToNew[v], i, v)
		}
		oldToNew[v] = int32(i)
	}
	newToOld = slices.Clone(nodes)
	// New ids are monotone in old ids only if nodes is sorted; otherwise the
	// renamed rows need sorting.
	sorted := slices.IsSorted(nodes)
	sub = mapRows(len(nodes), func(i int) int {
		k := 0
		for _, u := range g.Adj(int(nodes[i])) {
			if oldToNew[u] >= 0 {
				k++
			}
		}
		return k
	}, func(i int, out []int32) {
		k := 0
		for _, u := range g.Adj(int(nodes[i])) {
			if w := oldToNew[u]; w >= 0 {
				out[k] = w
				k++
			}
		}
	}, !sorted)
	return sub, newToOld, oldToNew, nil
}

// Permute renames every node v to perm[v], which must be a permutation of
// 0..N-1.
func (g *Graph) Permute(perm []int32) (*Graph, error) {
	inverse, err := invertPermutation(perm, g.N)
	if err != nil {
		return nil, err
	}
	return mapRows(g.N, func(r int) int {
		return g.Degree(int(inverse[r]))
	}, func(r int, out []int32) {
		for k, u := range g.Adj(int(inverse[r])) {
			out[k] = perm[u]
		}
	}, true), nil
}

// invertPermutation checks that perm is a permutation of 0..n-1 and returns
// its inverse.
func invertPermutation(perm []int32, n int) ([]int32, error) {
	if len(perm) != n {
		return nil, fmt.Errorf("graph: permutation has %d entries for %d nodes", len(perm), n)
	}
	inverse := make([]int32, n)
	for i := range inverse {
		inverse[i] = -1
	}
	for v, p := range perm {
		if p < 0 || int(p) >= n {
			return nil, fmt.Errorf("graph: permutation maps %d to %d, outside [0, %d)", v, p, n)
		}
		if inverse[p] >= 0 {
			return nil, fmt.Errorf("graph: permutation maps both %d and %d to %d", inverse[p], v, p)
		}
		inverse[p] = int32(v)
	}
	return inverse, nil
}

// mapRows builds an n-row graph row by row: row r has rowLen(r) entries,
// written by fill(r, out) into an out of exactly that length. Rows are
// sorted afterwards if sortRows is set; otherwise fill must write them sorted.
func mapRows(n int, rowLen func(r int) int, fill func(r int, out []int32), sortRows bool) *Graph {
	offsets := make([]int64, n+1)
	parallel.For(n, rowGrain, rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			offsets[r+1] = int64(rowLen(r))
		}
	}))
	for r := 0; r < n; r++ {
		offsets[r+1] += offsets[r]
	}
	g := &Graph{N: n, Offsets: offsets, Neighbors: make([]int32, offsets[n])}
	parallel.ForBounds(g.rowBounds(), rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			out := g.Adj(r)
			fill(r, out)
			if sortRows {
				slices.Sort(out)
			}
		}
	}))
	return g
}

// scatterBuild builds an n-node graph from edges that visit produces for
// chunks [bounds[c], bounds[c+1]) of its own item space. visit is called
// twice per chunk, once to count and once to place, and must emit the same
// edges both times; ids must be in range. Rows are sorted, and deduplicated
// if dedup is set (otherwise the edges must be distinct).
func scatterBuild(n int, bounds []int, visit func(lo, hi int, emit func(s, d int32)), dedup bool) *Graph {
	offsets := make([]int64, n+1)
	parallel.ForBounds(bounds, rangeTask(func(lo, hi int) {
		visit(lo, hi, func(s, _ int32) { atomic.AddInt64(&offsets[s], 1) })
	}))
	var total int64
	for v := 0; v < n; v++ {
		total += offsets[v]
		offsets[v] = total
	}
	offsets[n] = total
	neighbors := make([]int32, total)
	parallel.ForBounds(bounds, rangeTask(func(lo, hi int) {
		visit(lo, hi, func(s, d int32) { neighbors[atomic.AddInt64(&offsets[s], -1)] = d })
	}))
	g := &Graph{N: n, Offsets: offsets, Neighbors: neighbors}
	if dedup {
		g.sortAndDedupRows()
	} else {
		g.sortRows()
	}
	return g
}

// sortRows sorts every row in place.
func (g *Graph) sortRows() {
	parallel.ForBounds(g.rowBounds(), rangeTask(func(lo, hi int) {
		for v := lo; v < hi; v++ {
			slices.Sort(g.Adj(v))
		}
	}))
}
