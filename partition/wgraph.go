package partition

import (
	"math/rand/v2"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
)

// wgraph is the weighted graph the multilevel scheme works on: the input
// graph at level 0 (edge weights nil, meaning 1, so the input is not
// copied) and the contracted graphs above it.
type wgraph struct {
	n    int
	ncon int
	xadj []int64
	adj  []int32
	adjw []int32 // nil: every edge weighs 1
	vw   []int32 // n*ncon vertex weights
	tvw  []int64 // total weight per constraint
}

func (g *wgraph) ew(j int64) int32 {
	if g.adjw == nil {
		return 1
	}
	return g.adjw[j]
}

// newWGraph wraps g with the vertex weights of cons.
func newWGraph(g *graph.Graph, cons *constraints) *wgraph {
	w := &wgraph{n: g.N, ncon: cons.ncon, xadj: g.Offsets, adj: g.Neighbors, vw: make([]int32, g.N*cons.ncon), tvw: cons.total}
	for v := 0; v < g.N; v++ {
		for c := 0; c < cons.ncon; c++ {
			w.vw[v*cons.ncon+c] = int32(cons.weight(c, v))
		}
	}
	return w
}

// match pairs vertices for contraction: heavy-edge matching visiting
// vertices by increasing degree, then, if too many stay single (as on
// power-law graphs, where leaves of a hub have no free neighbour), pairing
// single vertices that share a neighbour, and finally pairing isolated
// vertices with each other.
func match(g *wgraph, maxVW []int64, rng *rand.Rand) *matching {
	n, ncon := g.n, g.ncon
	mate := make([]int32, n)
	for i := range mate {
		mate[i] = -1
	}
	fits := func(u, v int32) bool {
		for c := 0; c < ncon; c++ {
			if int64(g.vw[int(u)*ncon+c])+int64(g.vw[int(v)*ncon+c]) > maxVW[c] {
				return false
			}
		}
		return true
	}
	order := degreeOrder(g, rng)
	single := 0
	for _, v := range order {
		if mate[v] >= 0 {
			continue
		}
		best, bestW := int32(-1), int32(-1)
		for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
			u := g.adj[j]
			if u == v || mate[u] >= 0 {
				continue
			}
			if w := g.ew(j); w > bestW && fits(u, v) {
				best, bestW = u, w
			}
		}
		if best >= 0 {
			mate[v], mate[best] = best, v
		} else {
			single++
		}
	}
	if single > n/10 {
		// Two-hop matching, as METIS does it: single vertices adjacent to
		// the same vertex, first those of degree at most 2 (leaves of the
		// same hub), then, if still too many are single, those of degree at
		// most 64. Pairing high-degree vertices through a shared neighbour
		// would merge unrelated clusters.
		// pend[h] is a single vertex waiting for a partner next to h.
		pend := make([]int32, n)
		for i := range pend {
			pend[i] = -1
		}
		for _, maxDeg := range []int64{2, 64} {
			for _, u := range order {
				if mate[u] >= 0 || g.xadj[u+1]-g.xadj[u] > maxDeg {
					continue
				}
				for j := g.xadj[u]; j < g.xadj[u+1]; j++ {
					h := g.adj[j]
					if h == u {
						continue
					}
					if p := pend[h]; p >= 0 && p != u && mate[p] < 0 && fits(p, u) {
						mate[p], mate[u] = u, p
						single -= 2
						pend[h] = -1
						break
					}
					pend[h] = u
				}
			}
			if single <= n/10 {
				break
			}
			for i := range pend {
				pend[i] = -1
			}
		}
		// Isolated vertices: pair them in order.
		pending := int32(-1)
		for v := int32(0); int(v) < n; v++ {
			if mate[v] >= 0 || !isolated(g, v) {
				continue
			}
			if pending < 0 {
				pending = v
			} else if fits(pending, v) {
				mate[pending], mate[v] = v, pending
				pending = -1
			}
		}
	}
	cmap := make([]int32, n)
	first := make([]int32, 0, n/2+1)
	for v := int32(0); int(v) < n; v++ {
		if mate[v] < 0 {
			mate[v] = v
		}
		if v <= mate[v] {
			c := int32(len(first))
			cmap[v], cmap[mate[v]] = c, c
			first = append(first, v)
		}
	}
	return &matching{cmap: cmap, mate: mate, first: first}
}

// matching is a pairing of a graph's vertices into coarse vertices.
type matching struct {
	cmap  []int32 // coarse id of every vertex
	mate  []int32 // partner of every vertex (itself if single)
	first []int32 // first[c] is coarse vertex c's lower member
}

func isolated(g *wgraph, v int32) bool {
	for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
		if g.adj[j] != v {
			return false
		}
	}
	return true
}

// degreeOrder is a random permutation stably sorted by degree, so that
// low-degree vertices choose their partner first (METIS's sorted HEM).
func degreeOrder(g *wgraph, rng *rand.Rand) []int32 {
	perm := make([]int32, g.n)
	for i := range perm {
		perm[i] = int32(i)
	}
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	const buckets = 64
	count := make([]int, buckets+1)
	deg := func(v int32) int { return int(min(g.xadj[v+1]-g.xadj[v], buckets-1)) }
	for _, v := range perm {
		count[deg(v)+1]++
	}
	for b := 0; b < buckets; b++ {
		count[b+1] += count[b]
	}
	order := make([]int32, g.n)
	for _, v := range perm {
		d := deg(v)
		order[count[d]] = v
		count[d]++
	}
	return order
}

// contract builds the coarse graph of a matching: each pair becomes one
// vertex carrying the sum of its weights, and parallel edges merge into one
// carrying the sum of theirs. Ranges of coarse vertices are built in
// parallel, each with its own scratch.
func contract(g *wgraph, m *matching) *wgraph {
	cn := len(m.first)
	chunks := min(2*parallel.Workers(), max(1, cn/4096))
	bounds := make([]int, chunks+1)
	for c := range bounds {
		bounds[c] = int(int64(cn) * int64(c) / int64(chunks))
	}
	t := &contractTask{g: g, m: m, bounds: bounds, out: make([]contractChunk, chunks)}
	parallel.ForBounds(bounds, t)

	cg := &wgraph{n: cn, ncon: g.ncon, xadj: make([]int64, cn+1), vw: make([]int32, cn*g.ncon), tvw: g.tvw}
	var total int64
	for _, ch := range t.out {
		total += int64(len(ch.adj))
	}
	cg.adj = make([]int32, 0, total)
	cg.adjw = make([]int32, 0, total)
	for c, ch := range t.out {
		lo := bounds[c]
		base := int64(len(cg.adj))
		for i, x := range ch.xadj {
			cg.xadj[lo+i+1] = base + x
		}
		cg.adj = append(cg.adj, ch.adj...)
		cg.adjw = append(cg.adjw, ch.adjw...)
		t.out[c] = contractChunk{}
	}
	ncon := g.ncon
	for c, v := range m.first {
		u := m.mate[v]
		for i := 0; i < ncon; i++ {
			w := g.vw[int(v)*ncon+i]
			if u != v {
				w += g.vw[int(u)*ncon+i]
			}
			cg.vw[c*ncon+i] = w
		}
	}
	return cg
}

type contractChunk struct {
	xadj []int64 // row ends, relative to the chunk
	adj  []int32
	adjw []int32
}

type contractTask struct {
	g      *wgraph
	m      *matching
	bounds []int
	out    []contractChunk
}

func (t *contractTask) Run(lo, hi int) {
	g, m := t.g, t.m
	// The fine degrees bound the coarse ones, so one allocation suffices.
	var bound int64
	for c := lo; c < hi; c++ {
		v := m.first[c]
		bound += g.xadj[v+1] - g.xadj[v]
		if u := m.mate[v]; u != v {
			bound += g.xadj[u+1] - g.xadj[u]
		}
	}
	ch := contractChunk{xadj: make([]int64, hi-lo), adj: make([]int32, 0, bound), adjw: make([]int32, 0, bound)}
	// marker[cu] is cu's position in the row being built, or -1; each chunk
	// has its own, and resets only the entries its row touched.
	marker := make([]int32, len(m.first))
	for i := range marker {
		marker[i] = -1
	}
	for c := lo; c < hi; c++ {
		start := len(ch.adj)
		v := m.first[c]
		members := [2]int32{v, m.mate[v]}
		nm := 1
		if members[1] != v {
			nm = 2
		}
		for _, x := range members[:nm] {
			for j := g.xadj[x]; j < g.xadj[x+1]; j++ {
				cu := m.cmap[g.adj[j]]
				if int(cu) == c {
					continue
				}
				if i := marker[cu]; i >= 0 {
					ch.adjw[i] += g.ew(j)
				} else {
					marker[cu] = int32(len(ch.adj))
					ch.adj = append(ch.adj, cu)
					ch.adjw = append(ch.adjw, g.ew(j))
				}
			}
		}
		for _, cu := range ch.adj[start:] {
			marker[cu] = -1
		}
		ch.xadj[c-lo] = int64(len(ch.adj))
	}
	t.out[searchBounds(t.bounds, lo)] = ch
}
