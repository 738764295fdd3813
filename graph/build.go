package graph

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/graft-gnn/graft/internal/parallel"
)

// SelfLoops says what a builder does with edges (v, v).
type SelfLoops int

const (
	DropSelfLoops SelfLoops = iota // remove any (v, v)
	KeepSelfLoops                  // keep the ones in the input
)

// BuildOptions controls FromEdges.
type BuildOptions struct {
	Symmetrize bool // add (v, u) for every (u, v)
	SelfLoops  SelfLoops
}

// MaxNodes is the largest node count a Graph can have: node ids are int32.
const MaxNodes = math.MaxInt32

// Grain sizes for parallel loops: below these a chunk costs more to hand out
// than to run.
const (
	edgeGrain = 1 << 16
	rowGrain  = 1 << 12
)

// rangeTask adapts a closure to parallel.Task.
type rangeTask func(lo, hi int)

func (f rangeTask) Run(lo, hi int) { f(lo, hi) }

// FromEdges builds a CSR graph on n nodes from the directed edges
// (src[i], dst[i]): row src[i] gets neighbour dst[i]. Duplicate edges are
// removed and rows sorted. An id outside [0, n) or len(src) != len(dst) is an
// error naming the edge index.
//
// The edges are counted and scattered straight into the output's neighbour
// array, so besides the caller's edge lists the only large allocation is the
// output itself (sized before duplicates are removed). The result does not
// depend on edge order or on the number of workers.
func FromEdges(n int, src, dst []int32, opt BuildOptions) (*Graph, error) {
	if n < 0 || n > MaxNodes {
		return nil, fmt.Errorf("graph: node count %d outside [0, %d]", n, MaxNodes)
	}
	if len(src) != len(dst) {
		return nil, fmt.Errorf("graph: %d sources but %d destinations (edge %d has no partner)",
			len(src), len(dst), min(len(src), len(dst)))
	}
	if opt.SelfLoops != DropSelfLoops && opt.SelfLoops != KeepSelfLoops {
		return nil, fmt.Errorf("graph: unknown self-loop option %d", opt.SelfLoops)
	}
	if err := checkEdges(n, src, dst); err != nil {
		return nil, err
	}
	drop := opt.SelfLoops == DropSelfLoops
	sym := opt.Symmetrize

	// Count row lengths into offsets[v], then turn them into row ends with an
	// inclusive prefix sum. Scattering decrements each row's end, leaving
	// offsets[v] at the row's start when done.
	offsets := make([]int64, n+1)
	m := len(src)
	parallel.For(m, edgeGrain, rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s, d := src[i], dst[i]
			if drop && s == d {
				continue
			}
			atomic.AddInt64(&offsets[s], 1)
			if sym {
				atomic.AddInt64(&offsets[d], 1)
			}
		}
	}))
	var total int64
	for v := 0; v < n; v++ {
		total += offsets[v]
		offsets[v] = total
	}
	offsets[n] = total
	neighbors := make([]int32, total)
	parallel.For(m, edgeGrain, rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s, d := src[i], dst[i]
			if drop && s == d {
				continue
			}
			neighbors[atomic.AddInt64(&offsets[s], -1)] = d
			if sym {
				neighbors[atomic.AddInt64(&offsets[d], -1)] = s
			}
		}
	}))
	g := &Graph{N: n, Offsets: offsets, Neighbors: neighbors}
	g.sortAndDedupRows()
	return g, nil
}

// checkEdges reports the first edge (lowest index) with an id outside [0, n).
func checkEdges(n int, src, dst []int32) error {
	chunks := parallel.Workers() * 4
	firstBad := make([]int, chunks) // per chunk, so the lowest index wins deterministically
	for c := range firstBad {
		firstBad[c] = -1
	}
	m := len(src)
	parallel.For(chunks, 1, rangeTask(func(clo, chi int) {
		for c := clo; c < chi; c++ {
			lo, hi := m*c/chunks, m*(c+1)/chunks
			for i := lo; i < hi; i++ {
				if uint32(src[i]) >= uint32(n) || uint32(dst[i]) >= uint32(n) {
					firstBad[c] = i
					break
				}
			}
		}
	}))
	for _, i := range firstBad {
		if i >= 0 {
			return edgeRangeError(n, i, src[i], dst[i])
		}
	}
	return nil
}

func edgeRangeError(n, i int, s, d int32) error {
	if uint32(s) >= uint32(n) {
		return fmt.Errorf("graph: edge %d: source %d outside [0, %d)", i, s, n)
	}
	return fmt.Errorf("graph: edge %d: destination %d outside [0, %d)", i, d, n)
}

// sortAndDedupRows sorts every row, removes repeated neighbours and compacts
// the neighbour array in place.
func (g *Graph) sortAndDedupRows() {
	n := g.N
	lengths := make([]int32, n) // row lengths after deduplication
	var removed atomic.Int64
	parallel.ForBounds(g.rowBounds(), rangeTask(func(lo, hi int) {
		var dropped int64
		for v := lo; v < hi; v++ {
			row := g.Adj(v)
			slices.Sort(row)
			k := len(slices.Compact(row))
			lengths[v] = int32(k)
			dropped += int64(len(row) - k)
		}
		removed.Add(dropped)
	}))
	if removed.Load() == 0 {
		return
	}
	// Compaction moves rows left; it is sequential because a chunk's
	// destination can overlap the previous chunk's unread source.
	var w int64
	for v := 0; v < n; v++ {
		start := g.Offsets[v]
		k := int64(lengths[v])
		copy(g.Neighbors[w:w+k], g.Neighbors[start:start+k])
		g.Offsets[v] = w
		w += k
	}
	g.Offsets[n] = w
	if w < int64(len(g.Neighbors))-int64(len(g.Neighbors))/8 {
		// Many duplicates: return the slack rather than pin it for the
		// graph's lifetime.
		g.Neighbors = slices.Clone(g.Neighbors[:w])
	} else {
		g.Neighbors = g.Neighbors[:w:w]
	}
}

// rowBounds cuts the rows into chunks of about equal numbers of entries (plus
// rows, so that long runs of empty rows are shared too), for parallel loops
// whose cost follows the row lengths.
func (g *Graph) rowBounds() []int {
	return rowBounds(g.Offsets, g.N)
}

func rowBounds(offsets []int64, n int) []int {
	chunks := parallel.Workers() * 8
	cost := offsets[n] + int64(n)
	if cost < edgeGrain || chunks <= 1 {
		return []int{0, n}
	}
	bounds := make([]int, 0, chunks+1)
	bounds = append(bounds, 0)
	for c := 1; c < chunks; c++ {
		target := cost * int64(c) / int64(chunks)
		// Smallest v with offsets[v]+v >= target.
		lo, hi := bounds[len(bounds)-1], n
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if offsets[mid]+int64(mid) < target {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo > bounds[len(bounds)-1] {
			bounds = append(bounds, lo)
		}
	}
	if bounds[len(bounds)-1] != n {
		bounds = append(bounds, n)
	}
	return bounds
}
