package partition

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// sides tracks the weight of the two sides of a bisection against the
// largest weight each may carry, per constraint.
type sides struct {
	ncon int
	vw   []int32
	pw   [2][]int64
	maxw [2][]float64
}

func newSides(g *wgraph, frac, ub float64) *sides {
	s := &sides{ncon: g.ncon, vw: g.vw}
	for side := range 2 {
		s.pw[side] = make([]int64, g.ncon)
		s.maxw[side] = make([]float64, g.ncon)
		f := frac
		if side == 1 {
			f = 1 - frac
		}
		for c := 0; c < g.ncon; c++ {
			s.maxw[side][c] = math.Max(ub*f*float64(g.tvw[c]), 1)
		}
	}
	return s
}

func (s *sides) recount(where []int8) {
	clear(s.pw[0])
	clear(s.pw[1])
	for v, side := range where {
		for c := 0; c < s.ncon; c++ {
			s.pw[side][c] += int64(s.vw[v*s.ncon+c])
		}
	}
}

func (s *sides) move(v int32, from, to int8) {
	for c := 0; c < s.ncon; c++ {
		w := int64(s.vw[int(v)*s.ncon+c])
		s.pw[from][c] -= w
		s.pw[to][c] += w
	}
}

// ratio is the fullest constraint of one side: above 1 means overweight.
func (s *sides) ratio(side int8) float64 {
	r := 0.0
	for c := 0; c < s.ncon; c++ {
		r = math.Max(r, float64(s.pw[side][c])/s.maxw[side][c])
	}
	return r
}

func (s *sides) balance() float64 { return math.Max(s.ratio(0), s.ratio(1)) }

// better orders bisection states: any balanced state beats any unbalanced
// one; balanced states compare by cut, unbalanced ones by balance.
func better(cut int64, bal float64, bestCut int64, bestBal float64) bool {
	const tol = 1e-9
	if bal <= 1+tol {
		return bestBal > 1+tol || cut < bestCut || (cut == bestCut && bal < bestBal)
	}
	return bal < bestBal
}

func cut2(g *wgraph, where []int8) int64 {
	var cut int64
	for v := 0; v < g.n; v++ {
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			if where[g.adj[j]] != where[v] {
				cut += int64(g.ew(j))
			}
		}
	}
	return cut / 2
}

// fm2 is Fiduccia–Mattheyses refinement of a bisection: each pass moves
// vertices one at a time by best gain from the heavier side, allowing moves
// that make the cut worse, then rolls back to the best state seen. While the
// bisection is unbalanced every vertex of the heavy side is a candidate, so
// components without boundary can still move. Internal and external degrees
// are computed once and kept up to date, so a pass costs the boundary plus
// the edges of the vertices it moves.
func fm2(g *wgraph, where []int8, s *sides, passes int) {
	n := g.n
	id := make([]int64, n)
	ed := make([]int64, n)
	var cut int64
	for v := 0; v < n; v++ {
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			u := g.adj[j]
			if int(u) == v {
				continue
			}
			if where[u] == where[v] {
				id[v] += int64(g.ew(j))
			} else {
				ed[v] += int64(g.ew(j))
			}
		}
		cut += ed[v]
	}
	cut /= 2
	// flip moves v to the other side, keeping degrees, cut and weights.
	flip := func(v int32) {
		from := where[v]
		to := 1 - from
		where[v] = to
		s.move(v, from, to)
		cut -= ed[v] - id[v]
		id[v], ed[v] = ed[v], id[v]
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			u := g.adj[j]
			if u == v {
				continue
			}
			w := int64(g.ew(j))
			if where[u] == to {
				id[u] += w
				ed[u] -= w
			} else {
				id[u] -= w
				ed[u] += w
			}
		}
	}
	locked := make([]bool, n)
	var touched []int32 // locked this pass
	heaps := [2]*gainHeap{newGainHeap(n), newGainHeap(n)}
	var moves []int32
	limit := min(max(n/100, 15), 100)
	for pass := 0; pass < passes; pass++ {
		bal := s.balance()
		heavy := int8(-1)
		if bal > 1 {
			heavy = 0
			if s.ratio(1) > s.ratio(0) {
				heavy = 1
			}
		}
		heaps[0].reset()
		heaps[1].reset()
		for _, v := range touched {
			locked[v] = false
		}
		touched = touched[:0]
		for v := 0; v < n; v++ {
			if ed[v] > 0 || where[v] == heavy {
				heaps[where[v]].push(int32(v), ed[v]-id[v])
			}
		}
		moves = moves[:0]
		bestCut, bestBal, bestLen := cut, bal, 0
		for {
			from := int8(0)
			if s.ratio(1) > s.ratio(0) {
				from = 1
			}
			if heaps[from].len() == 0 {
				from = 1 - from
				if heaps[from].len() == 0 {
					break
				}
			}
			v := heaps[from].pop()
			locked[v] = true
			touched = append(touched, v)
			s.move(v, from, 1-from)
			newBal := s.balance()
			s.move(v, 1-from, from)
			if newBal > 1 && newBal > bal {
				continue // would unbalance: skip v this pass
			}
			flip(v)
			for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
				u := g.adj[j]
				if u == v || locked[u] {
					continue
				}
				h := heaps[where[u]]
				if h.contains(u) {
					h.update(u, ed[u]-id[u])
				} else if ed[u] > 0 {
					h.push(u, ed[u]-id[u])
				}
			}
			moves = append(moves, v)
			bal = newBal
			if better(cut, bal, bestCut, bestBal) {
				bestCut, bestBal, bestLen = cut, bal, len(moves)
			} else if len(moves)-bestLen > limit {
				break
			}
		}
		for i := len(moves) - 1; i >= bestLen; i-- {
			flip(moves[i])
		}
		if bestLen == 0 {
			break
		}
	}
}

// bfsGrow grows side 0 breadth-first from a random vertex until it holds
// its share of the first constraint, restarting from another random vertex
// whenever a component runs out.
func bfsGrow(g *wgraph, s *sides, frac float64, rng *rand.Rand) []int8 {
	n := g.n
	where := make([]int8, n)
	for i := range where {
		where[i] = 1
	}
	s.recount(where)
	target := frac * float64(g.tvw[0])
	seen := make([]bool, n)
	queue := make([]int32, 0, n)
	restarts := rng.Perm(n)
	next := 0
	for float64(s.pw[0][0]) < target {
		if len(queue) == 0 {
			for next < n && seen[restarts[next]] {
				next++
			}
			if next == n {
				break
			}
			v := int32(restarts[next])
			seen[v] = true
			queue = append(queue, v)
		}
		v := queue[0]
		queue = queue[1:]
		if float64(s.pw[0][0]+int64(g.vw[int(v)*g.ncon])) > s.maxw[0][0] {
			continue
		}
		where[v] = 0
		s.move(v, 1, 0)
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			if u := g.adj[j]; !seen[u] {
				seen[u] = true
				queue = append(queue, u)
			}
		}
	}
	return where
}

// greedyGrow grows side 0 from a random vertex, always adding the
// vertex that cuts the fewest edges (greedy graph growing), until side 0
// holds its share of the first constraint; when a component runs out it
// continues from another random vertex.
func greedyGrow(g *wgraph, s *sides, frac float64, rng *rand.Rand) []int8 {
	n := g.n
	where := make([]int8, n)
	for i := range where {
		where[i] = 1
	}
	s.recount(where)
	target := frac * float64(g.tvw[0])
	wdeg := make([]int64, n) // weighted degree
	for v := 0; v < n; v++ {
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			if int(g.adj[j]) != v {
				wdeg[v] += int64(g.ew(j))
			}
		}
	}
	toSide0 := make([]int64, n)
	tried := make([]bool, n) // popped once: added, or too heavy to add
	h := newGainHeap(n)
	restarts := rng.Perm(n)
	next := 0
	for float64(s.pw[0][0]) < target {
		if h.len() == 0 {
			for next < n && (where[restarts[next]] == 0 || tried[restarts[next]]) {
				next++
			}
			if next == n {
				break
			}
			v := int32(restarts[next])
			h.push(v, -wdeg[v])
		}
		v := h.pop()
		tried[v] = true
		if float64(s.pw[0][0]+int64(g.vw[int(v)*g.ncon])) > s.maxw[0][0] {
			continue
		}
		where[v] = 0
		s.move(v, 1, 0)
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			u := g.adj[j]
			if u == v || where[u] == 0 || tried[u] {
				continue
			}
			toSide0[u] += int64(g.ew(j))
			gain := 2*toSide0[u] - wdeg[u]
			if h.contains(u) {
				h.update(u, gain)
			} else {
				h.push(u, gain)
			}
		}
	}
	return where
}

// bisectCoarsenTo is how far a bisection coarsens before its initial tries.
const bisectCoarsenTo = 100

// mlBisect splits g into sides holding frac and 1-frac of every constraint
// (within ub), minimising the cut: coarsen, try several grown bisections on
// the coarsest graph, then uncoarsen with FM refinement at every level.
func mlBisect(g *wgraph, frac, ub float64, tries, carried int, rng *rand.Rand) []int8 {
	maxVW := make([]int64, g.ncon)
	for c := range maxVW {
		maxVW[c] = int64(math.Max(1.5*float64(g.tvw[c])/bisectCoarsenTo, float64(maxWeight(g, c))))
	}
	levels := []*wgraph{g}
	var maps []*matching
	for cur := g; cur.n > bisectCoarsenTo; {
		m := match(cur, maxVW, rng)
		if len(m.first) > cur.n*95/100 {
			break
		}
		cur = contract(cur, m)
		levels = append(levels, cur)
		maps = append(maps, m)
	}
	top := levels[len(levels)-1]
	s := newSides(top, frac, ub)
	type candidate struct {
		where []int8
		cut   int64
		bal   float64
	}
	var cands []candidate
	for t := 0; t < tries; t++ {
		// Alternate the two ways of growing: breadth-first suits graphs of
		// many small components (web graphs), greedy growth the rest.
		grow := bfsGrow
		if t%2 == 1 {
			grow = greedyGrow
		}
		where := grow(top, s, frac, rng)
		fm2(top, where, s, growPasses)
		cands = append(cands, candidate{where, cut2(top, where), s.balance()})
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case better(a.cut, a.bal, b.cut, b.bal):
			return -1
		case better(b.cut, b.bal, a.cut, a.bal):
			return 1
		}
		return 0
	})
	// The coarsest cut predicts the final one only roughly (on web graphs
	// especially), and coarsening is most of the cost, so the best few
	// initial bisections are all carried down and the best result kept.
	var best []int8
	bestCut, bestBal := int64(math.MaxInt64), math.Inf(1)
	for _, c := range cands[:min(len(cands), carried)] {
		where := c.where
		for l := len(levels) - 2; l >= 0; l-- {
			fine := make([]int8, levels[l].n)
			for v, cv := range maps[l].cmap {
				fine[v] = where[cv]
			}
			where = fine
			s.vw = levels[l].vw
			s.recount(where)
			fm2(levels[l], where, s, 10)
		}
		s.vw = g.vw
		s.recount(where)
		if cut, bal := cut2(g, where), s.balance(); best == nil || better(cut, bal, bestCut, bestBal) {
			best, bestCut, bestBal = where, cut, bal
		}
		s.vw = top.vw
	}
	return best
}

// bisectCarried is how many of the best initial bisections are refined
// through every level.
const bisectCarried = 3

func maxWeight(g *wgraph, c int) int32 {
	var mx int32
	for v := 0; v < g.n; v++ {
		mx = max(mx, g.vw[v*g.ncon+c])
	}
	return mx
}

// recursiveBisect assigns parts base..base+k-1 to g's vertices in out by
// bisecting recursively, splitting k as evenly as it goes. The two halves
// are independent, so they run concurrently, each with its own generator
// seeded from rng so that results do not depend on scheduling.
func recursiveBisect(g *wgraph, k int, ub float64, tries, carried int, rng *rand.Rand, out []int32, base int32) {
	if k == 1 || g.n == 0 {
		for v := range out {
			out[v] = base
		}
		return
	}
	k0 := k / 2
	where := mlBisect(g, float64(k0)/float64(k), ub, tries, carried, rng)
	var sub [2]*wgraph
	var ids [2][]int32
	sub[0], ids[0], sub[1], ids[1] = split(g, where)
	where = nil
	seeds := [2]uint64{rng.Uint64(), rng.Uint64()}
	var wg sync.WaitGroup
	for side, kk := range [2]int{k0, k - k0} {
		run := func() {
			part := make([]int32, sub[side].n)
			recursiveBisect(sub[side], kk, ub, tries, carried, newRand(seeds[side]), part, base+int32(side*k0))
			for i, v := range ids[side] {
				out[v] = part[i]
			}
			sub[side] = nil
		}
		if kk > 1 && side == 0 && sub[side].n > 1000 {
			wg.Add(1)
			go func() { defer wg.Done(); run() }()
		} else {
			run()
		}
	}
	wg.Wait()
}

// split returns the subgraphs induced by each side with the original ids of
// their vertices.
func split(g *wgraph, where []int8) (g0 *wgraph, ids0 []int32, g1 *wgraph, ids1 []int32) {
	local := make([]int32, g.n)
	var ids [2][]int32
	for v, side := range where {
		local[v] = int32(len(ids[side]))
		ids[side] = append(ids[side], int32(v))
	}
	var sub [2]*wgraph
	for side := range 2 {
		var entries int64
		for _, v := range ids[side] {
			entries += g.xadj[v+1] - g.xadj[v]
		}
		sg := &wgraph{n: len(ids[side]), ncon: g.ncon, xadj: make([]int64, len(ids[side])+1), vw: make([]int32, len(ids[side])*g.ncon), tvw: make([]int64, g.ncon),
			adj: make([]int32, 0, entries), adjw: make([]int32, 0, entries)}
		for i, v := range ids[side] {
			for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
				if u := g.adj[j]; where[u] == int8(side) && u != v {
					sg.adj = append(sg.adj, local[u])
					sg.adjw = append(sg.adjw, g.ew(j))
				}
			}
			sg.xadj[i+1] = int64(len(sg.adj))
			for c := 0; c < g.ncon; c++ {
				w := g.vw[int(v)*g.ncon+c]
				sg.vw[i*g.ncon+c] = w
				sg.tvw[c] += int64(w)
			}
		}
		// A constraint nothing on this side carries must not divide by zero.
		for c := range sg.tvw {
			sg.tvw[c] = max(sg.tvw[c], 1)
		}
		sub[side] = sg
	}
	return sub[0], ids[0], sub[1], ids[1]
}

// gainHeap is a max-heap of vertices keyed by gain, with positions so that
// keys can change in place.
type gainHeap struct {
	items []int32
	keys  []int64
	pos   []int32 // pos[v] is v's index in items, or -1
}

func newGainHeap(n int) *gainHeap {
	h := &gainHeap{pos: make([]int32, n)}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *gainHeap) len() int              { return len(h.items) }
func (h *gainHeap) contains(v int32) bool { return h.pos[v] >= 0 }

func (h *gainHeap) reset() {
	for _, v := range h.items {
		h.pos[v] = -1
	}
	h.items, h.keys = h.items[:0], h.keys[:0]
}

func (h *gainHeap) push(v int32, key int64) {
	h.items = append(h.items, v)
	h.keys = append(h.keys, key)
	h.pos[v] = int32(len(h.items) - 1)
	h.up(len(h.items) - 1)
}

func (h *gainHeap) pop() int32 {
	v := h.items[0]
	last := len(h.items) - 1
	h.swap(0, last)
	h.items, h.keys = h.items[:last], h.keys[:last]
	h.pos[v] = -1
	if last > 0 {
		h.down(0)
	}
	return v
}

// remove takes v out of the heap.
func (h *gainHeap) remove(v int32) {
	i := int(h.pos[v])
	last := len(h.items) - 1
	h.swap(i, last)
	h.items, h.keys = h.items[:last], h.keys[:last]
	h.pos[v] = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

func (h *gainHeap) update(v int32, key int64) {
	i := int(h.pos[v])
	old := h.keys[i]
	h.keys[i] = key
	if key > old {
		h.up(i)
	} else {
		h.down(i)
	}
}

func (h *gainHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.keys[i], h.keys[j] = h.keys[j], h.keys[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

func (h *gainHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.keys[p] >= h.keys[i] {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *gainHeap) down(i int) {
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h.keys[c+1] > h.keys[c] {
			c++
		}
		if h.keys[i] >= h.keys[c] {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// bisectTries is how many grown bisections of the coarsest graph each
// bisection tries; they are cheap at about a hundred vertices.
const bisectTries = 8

// growPasses is how many FM passes refine each grown bisection of the
// coarsest graph before the best are chosen (METIS uses 4).
const growPasses = 4
