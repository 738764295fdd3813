package partition

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// kwayCoarsenTo is how far direct k-way partitioning coarsens before the
// initial partition (METIS's CoarsenTo for k-way: n/(20·log2 k), but at
// least 30 vertices per part).
func kwayCoarsenTo(n, k int) int {
	return max(n/(20*max(1, bits.Len(uint(k))-1)), 30*k)
}

// multilevelKway partitions g into k parts METIS-style: coarsen once by
// heavy-edge matching, partition the coarsest graph by recursive bisection
// (several tries, the best kept after k-way refinement), then project the
// partition down level by level with greedy k-way boundary refinement at
// every level.
func multilevelKway(g *wgraph, k int, cons *constraints, eps float64, passes, tries, carry int, rng *rand.Rand, parts []int32) {
	coarsenTo := kwayCoarsenTo(g.n, k)
	maxVW := make([]int64, g.ncon)
	for c := range maxVW {
		maxVW[c] = int64(math.Max(1.5*float64(g.tvw[c])/float64(coarsenTo), float64(maxWeight(g, c))))
	}
	levels := []*wgraph{g}
	var maps []*matching
	for cur := g; cur.n > coarsenTo; {
		m := match(cur, maxVW, rng)
		if len(m.first) > cur.n*95/100 {
			break
		}
		cur = contract(cur, m)
		levels = append(levels, cur)
		maps = append(maps, m)
	}
	top := levels[len(levels)-1]

	// Initial partitions: recursive bisection of the coarsest graph, each
	// refined there; the coarsest cut predicts the final one only roughly,
	// so the best few are all carried down and the best result kept.
	ub := math.Pow(1+eps, 1/float64(bits.Len(uint(k-1))))
	type candidate struct {
		where []int32
		bnd   []bool
		cut   int64
		over  float64
	}
	better := func(a, b candidate) bool {
		return a.over < b.over-1e-12 || (a.over <= b.over+1e-12 && a.cut < b.cut)
	}
	if tries <= 0 {
		// Each try costs a few times the coarsest graph, so the number
		// follows how small it is beside the input: more where coarsening
		// shrank the graph well (sparse or large graphs), fewer where the
		// coarsest graph is still a good part of it (small dense ones).
		tries = int(max(2, min(kwayMaxTries, int64(len(g.adj))/max(1, 4*int64(len(top.adj))))))
	}
	var cands []candidate
	for t := 0; t < tries; t++ {
		w := make([]int32, top.n)
		recursiveBisect(top, k, ub, kwayBisectTries, kwayBisectCarried, newRand(rng.Uint64()), w, 0)
		r := newKway(top, w, k, cons, eps)
		r.balance(rng)
		b := r.refineBoundary(nil, passes, rng)
		c := candidate{w, b, r.cut(), r.totalOverage()}
		cands = append(cands, c)
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	var best candidate
	for i, c := range cands[:min(len(cands), carry)] {
		where, bnd := c.where, c.bnd
		var r *kway
		for l := len(levels) - 2; l >= 0; l-- {
			where, bnd, r = uncoarsenLevel(levels[l], maps[l], where, bnd, k, cons, eps, passes, rng)
		}
		if r == nil {
			r = newKway(top, where, k, cons, eps)
		}
		c = candidate{where: where, cut: r.cut(), over: r.totalOverage()}
		if i == 0 || better(c, best) {
			best = c
		}
	}
	copy(parts, best.where)
}

// uncoarsenLevel projects a partition of the coarse graph of m onto fg and
// refines it there. A fine vertex can be on the boundary only if its
// coarse vertex was, so only those are candidates for refinement.
func uncoarsenLevel(fg *wgraph, m *matching, cwhere []int32, cbnd []bool, k int, cons *constraints, eps float64, passes int, rng *rand.Rand) ([]int32, []bool, *kway) {
	where := make([]int32, fg.n)
	var cand []int32
	for v, cv := range m.cmap {
		where[v] = cwhere[cv]
		if cbnd[cv] {
			cand = append(cand, int32(v))
		}
	}
	r := newKway(fg, where, k, cons, eps)
	if r.anyOver() {
		r.balance(rng)
		cand = nil // balancing moves anything: consider every vertex
	}
	bnd := r.refineBoundary(cand, passes, rng)
	return where, bnd, r
}

// kwayCarried is how many of the best initial partitions are refined
// through every level.
const kwayCarried = 2

func (r *kway) anyOver() bool {
	for p := 0; p < r.k; p++ {
		if r.over(int32(p)) {
			return true
		}
	}
	return false
}

func (r *kway) totalOverage() float64 {
	o := 0.0
	for p := 0; p < r.k; p++ {
		for c := 0; c < r.ncon; c++ {
			o += r.overage(r.pw[p*r.ncon+c], c)
		}
	}
	return o
}

func (r *kway) cut() int64 {
	g := r.g
	var cut int64
	for v := 0; v < g.n; v++ {
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			if r.where[g.adj[j]] != r.where[v] {
				cut += int64(g.ew(j))
			}
		}
	}
	return cut / 2
}

// refineBoundary is greedy k-way refinement from the candidates given (nil:
// every vertex), and returns which vertices are on the boundary
// afterwards. Each pass takes the candidates in order of ed−id (external
// minus internal degree, which bounds the gain from above), most
// promising first, and moves each to the neighbouring part it is most
// connected to when that lowers the cut (or keeps it and evens the
// weights) and the bounds allow it. Degrees are computed when a vertex is
// first needed and kept up to date as its neighbours move, so a pass costs
// the candidates' edges plus those of the vertices it moves.
func (r *kway) refineBoundary(cand []int32, passes int, rng *rand.Rand) []bool {
	g := r.g
	n := g.n
	if cand == nil {
		cand = make([]int32, n)
		for i := range cand {
			cand[i] = int32(i)
		}
	}
	rng.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
	id := make([]int64, n)
	ed := make([]int64, n)
	known := make([]bool, n) // id and ed computed
	seen := make([]bool, n)  // in all
	all := make([]int32, 0, len(cand))
	ensure := func(v int32) {
		if known[v] {
			return
		}
		known[v] = true
		p := r.where[v]
		var in, out int64
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			u := g.adj[j]
			if u == v {
				continue
			}
			if r.where[u] == p {
				in += int64(g.ew(j))
			} else {
				out += int64(g.ew(j))
			}
		}
		id[v], ed[v] = in, out
		if !seen[v] {
			seen[v] = true
			all = append(all, v)
		}
	}
	for _, v := range cand {
		ensure(v)
	}
	h := newGainHeap(n)
	locked := make([]bool, n)
	var popped []int32
	for pass := 0; pass < passes; pass++ {
		h.reset()
		for _, v := range popped {
			locked[v] = false
		}
		popped = popped[:0]
		for _, v := range all {
			if ed[v] > 0 && ed[v] >= id[v] {
				h.push(v, ed[v]-id[v])
			}
		}
		moved := 0
		for h.len() > 0 {
			v32 := h.pop()
			v := int(v32)
			locked[v] = true
			popped = append(popped, v32)
			a := r.where[v]
			if !r.canLeave(a, v) {
				continue
			}
			touched := r.connect(v)
			internal := r.conn[a]
			best, bestConn := int32(-1), int64(-1)
			for _, p := range touched {
				if p == a || !r.fits(p, v) {
					continue
				}
				if c := r.conn[p]; c > bestConn || (c == bestConn && r.pw[int(p)*r.ncon] < r.pw[int(best)*r.ncon]) {
					best, bestConn = p, c
				}
			}
			r.release()
			if best < 0 {
				continue
			}
			w0 := int64(g.vw[v*r.ncon])
			if !(bestConn > internal || (bestConn == internal && r.pw[int(best)*r.ncon]+w0 < r.pw[int(a)*r.ncon])) {
				continue
			}
			r.move(v, best)
			moved++
			total := id[v] + ed[v]
			id[v], ed[v] = bestConn, total-bestConn
			for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
				u := g.adj[j]
				if int(u) == v {
					continue
				}
				if known[u] {
					w := int64(g.ew(j))
					switch r.where[u] {
					case a:
						id[u] -= w
						ed[u] += w
					case best:
						id[u] += w
						ed[u] -= w
					}
				} else {
					ensure(u)
				}
				if locked[u] {
					continue
				}
				key := ed[u] - id[u]
				switch {
				case h.contains(u):
					if ed[u] > 0 && key >= 0 {
						h.update(u, key)
					} else {
						h.remove(u)
					}
				case ed[u] > 0 && key >= 0:
					h.push(u, key)
				}
			}
		}
		if moved <= n/2000 {
			break
		}
	}
	bnd := locked
	clear(bnd)
	for _, v := range all {
		bnd[v] = ed[v] > 0
	}
	return bnd
}

// kwayMaxTries bounds the initial partitions k-way partitioning tries.
const kwayMaxTries = 8

// kwayBisectTries and kwayBisectCarried are mlBisect's parameters for the
// initial partitions of the coarsest graph.
var kwayBisectTries, kwayBisectCarried = 8, 3
