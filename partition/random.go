package partition

import (
	"container/heap"
	"math/rand/v2"

	"github.com/graft-gnn/graft/graph"
)

// Random assigns nodes to parts uniformly at random, balanced: part sizes
// differ by at most one node (and, with Options.Balance, balance-weighted
// nodes are dealt out evenly too). With NodeWeights it places nodes in a
// random order on the currently lightest part.
type Random struct{}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// Partition implements Partitioner.
func (Random) Partition(g *graph.Graph, k int, opts Options) ([]int32, error) {
	if err := checkInput(g, k, opts); err != nil {
		return nil, err
	}
	rng := newRand(opts.Seed)
	perm := make([]int32, g.N)
	for i := range perm {
		perm[i] = int32(i)
	}
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	parts := make([]int32, g.N)
	if opts.NodeWeights != nil {
		lightestFirst(perm, opts.NodeWeights, k, parts)
		return parts, nil
	}
	// Deal balance-weighted nodes first, then the rest, continuing the same
	// round so both groups and the total stay within one node per part.
	next := 0
	deal := func(pick func(v int32) bool) {
		for _, v := range perm {
			if pick(v) {
				parts[v] = int32(next)
				next++
				if next == k {
					next = 0
				}
			}
		}
	}
	if opts.Balance != nil {
		deal(func(v int32) bool { return opts.Balance[v] > 0 })
		deal(func(v int32) bool { return opts.Balance[v] <= 0 })
	} else {
		deal(func(int32) bool { return true })
	}
	return parts, nil
}

// lightestFirst places nodes in order on the part of least weight so far,
// ties going to the lower part id.
func lightestFirst(order []int32, w []int32, k int, parts []int32) {
	// The first k nodes go one per part so no part stays empty, even when
	// weights are zero.
	h := make(loadHeap, k)
	for p := range h {
		h[p] = partLoad{part: int32(p), load: int64(w[order[p]])}
		parts[order[p]] = int32(p)
	}
	heap.Init(&h)
	for _, v := range order[k:] {
		parts[v] = h[0].part
		h[0].load += int64(w[v])
		heap.Fix(&h, 0)
	}
}

type partLoad struct {
	load int64
	part int32
}

type loadHeap []partLoad

func (h loadHeap) Len() int { return len(h) }
func (h loadHeap) Less(i, j int) bool {
	return h[i].load < h[j].load || (h[i].load == h[j].load && h[i].part < h[j].part)
}
func (h loadHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *loadHeap) Push(x any)   { *h = append(*h, x.(partLoad)) }
func (h *loadHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
