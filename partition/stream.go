package partition

import (
	"fmt"
	"math"

	"github.com/graft-gnn/graft/graph"
)

// Stream is a one-pass Fennel partitioner (Tsourakakis et al., WSDM 2014).
// Nodes arrive in id order with their adjacency; each goes to the part p
// maximising
//
//	|N(v) ∩ P_p| - α·γ·|P_p|^(γ-1),   α = m·k^(γ-1)/n^γ,
//
// among the parts with room under the balance bound. It never revisits a
// node, so its memory is the assignment plus one row: PartitionRows runs it
// on rows that are read from disk one at a time.
type Stream struct {
	// Gamma is Fennel's exponent; 0 means 1.5, the value the paper
	// recommends.
	Gamma float64
}

// Partition implements Partitioner.
func (s Stream) Partition(g *graph.Graph, k int, opts Options) ([]int32, error) {
	if err := checkInput(g, k, opts); err != nil {
		return nil, err
	}
	return s.PartitionRows(g.N, g.NumEdges(), k, opts, func(v int) ([]int32, error) { return g.Adj(v), nil })
}

// PartitionRows partitions a graph of n nodes and edges stored adjacency
// entries whose rows arrive one at a time: row(v) is called once for each v
// in ascending order and its result is not kept.
func (s Stream) PartitionRows(n int, edges int64, k int, opts Options, row func(v int) ([]int32, error)) ([]int32, error) {
	if k <= 0 || k > n {
		return nil, fmt.Errorf("partition: %d parts for %d nodes: need 1 <= k <= n", k, n)
	}
	gamma := s.Gamma
	if gamma == 0 {
		gamma = 1.5
	}
	if gamma <= 1 || math.IsNaN(gamma) {
		return nil, fmt.Errorf("partition: Fennel gamma %g must exceed 1", gamma)
	}
	cons := newConstraints(n, k, opts)
	// α scales the size penalty so that it matches the neighbour term on
	// a graph of m edges spread over k parts of n/k nodes.
	total := float64(cons.total[0])
	alpha := math.Sqrt(float64(k)) * float64(edges/2) / math.Pow(total, gamma)
	if gamma != 1.5 {
		alpha = float64(edges/2) * math.Pow(float64(k), gamma-1) / math.Pow(total, gamma)
	}
	parts := make([]int32, n)
	for v := range parts {
		parts[v] = -1
	}
	load := make([]int64, k*cons.ncon)
	count := make([]int32, k) // neighbours of the current node in each part
	var touched []int32
	nodes := make([]int32, k) // node counts, to leave no part empty
	empty := k
	for v := 0; v < n; v++ {
		adj, err := row(v)
		if err != nil {
			return nil, fmt.Errorf("partition: reading row %d: %w", v, err)
		}
		touched = touched[:0]
		for _, u := range adj {
			if u < 0 || int(u) >= n {
				return nil, fmt.Errorf("partition: node %d has neighbour %d, out of range [0,%d)", v, u, n)
			}
			if p := parts[u]; p >= 0 {
				if count[p] == 0 {
					touched = append(touched, p)
				}
				count[p]++
			}
		}
		best, fallback := int32(-1), int32(0)
		bestScore := math.Inf(-1)
		for p := 0; p < k; p++ {
			l := float64(load[p*cons.ncon])
			if !cons.fits(load, p, v) {
				if l < float64(load[int(fallback)*cons.ncon]) {
					fallback = int32(p)
				}
				continue
			}
			score := float64(count[p]) - alpha*gamma*math.Pow(l, gamma-1)
			if score > bestScore {
				best, bestScore = int32(p), score
			}
		}
		if best < 0 {
			best = fallback // no part has room: the lightest takes it
		}
		if n-v <= empty && nodes[best] > 0 {
			// Only as many nodes remain as parts are empty: fill them.
			for p := range nodes {
				if nodes[p] == 0 {
					best = int32(p)
					break
				}
			}
		}
		if nodes[best] == 0 {
			empty--
		}
		nodes[best]++
		parts[v] = best
		cons.add(load, int(best), v, 1)
		for _, p := range touched {
			count[p] = 0
		}
	}
	return parts, nil
}

// constraints holds per-node weights for each balance constraint and the
// largest part weight each may reach.
type constraints struct {
	ncon  int
	w     [][]int32 // w[c] nil means every node weighs 1
	total []int64
	limit []int64 // per constraint
}

// Bound is the largest weight a part may carry under imbalance eps when the
// total weight is total, the heaviest node weighs maxWeight and there are k
// parts: (1+eps)·total/k, but never less than total/k + maxWeight, which
// makes the bound reachable even when parts are a few nodes each.
func Bound(total, maxWeight int64, k int, eps float64) int64 {
	mean := float64(total) / float64(k)
	return max(int64(math.Floor((1+eps)*mean)), int64(math.Ceil(mean))+maxWeight-1)
}

func newConstraints(n, k int, opts Options) *constraints {
	c := &constraints{}
	for _, w := range [][]int32{opts.NodeWeights, opts.Balance} {
		if w == nil && c.ncon > 0 {
			continue
		}
		var total, mx int64
		if w == nil {
			total, mx = int64(n), 1
		} else {
			for _, x := range w {
				total += int64(x)
				mx = max(mx, int64(x))
			}
		}
		if total == 0 {
			continue // a constraint nothing carries is always met
		}
		c.w = append(c.w, w)
		c.total = append(c.total, total)
		c.limit = append(c.limit, Bound(total, mx, k, opts.imbalance()))
		c.ncon++
	}
	if c.ncon == 0 { // every weight zero: balance node counts
		c.w, c.total, c.limit, c.ncon = [][]int32{nil}, []int64{int64(n)}, []int64{Bound(int64(n), 1, k, opts.imbalance())}, 1
	}
	return c
}

func (c *constraints) weight(i, v int) int64 {
	if c.w[i] == nil {
		return 1
	}
	return int64(c.w[i][v])
}

func (c *constraints) fits(load []int64, p, v int) bool {
	for i := 0; i < c.ncon; i++ {
		if w := c.weight(i, v); w > 0 && load[p*c.ncon+i]+w > c.limit[i] {
			return false
		}
	}
	return true
}

func (c *constraints) add(load []int64, p, v int, sign int64) {
	for i := 0; i < c.ncon; i++ {
		load[p*c.ncon+i] += sign * c.weight(i, v)
	}
}
