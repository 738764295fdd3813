package partition

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
)

// Multilevel is a METIS-style partitioner in pure Go: multilevel recursive
// bisection followed by k-way refinement. Each bisection coarsens its graph
// by heavy-edge matching (two-hop matching where hubs leave many vertices
// single) to about a hundred vertices, tries several grown bisections of
// the coarsest graph, and uncoarsens with Fiduccia–Mattheyses boundary
// refinement at every level, under a balance bound on every constraint.
// The two halves of each bisection are partitioned concurrently. A final
// greedy k-way boundary refinement then improves the cut across all parts
// and brings every constraint within its bound.
type Multilevel struct {
	// Passes bounds the final k-way refinement passes; 0 means 10.
	Passes int
	// Recursive partitions by multilevel recursive bisection of the whole
	// graph instead of coarsening once for k-way refinement.
	Recursive bool
	// Tries is how many initial partitions of the coarsest graph k-way
	// partitioning tries; 0 means as many as are cheap beside the
	// coarsening (up to 8).
	Tries int
	// Carry is how many of the best initial partitions are refined through
	// every level, the best result kept; 0 means kwayCarried.
	Carry int
}

// Partition implements Partitioner. g must be undirected.
func (ml Multilevel) Partition(g *graph.Graph, k int, opts Options) ([]int32, error) {
	if err := checkInput(g, k, opts); err != nil {
		return nil, err
	}
	if err := checkSymmetricParallel(g); err != nil {
		return nil, err
	}
	parts := make([]int32, g.N)
	if k == 1 {
		return parts, nil
	}
	passes := ml.Passes
	if passes <= 0 {
		passes = 10
	}
	cons := newConstraints(g.N, k, opts)
	rng := newRand(opts.Seed)
	eps := opts.imbalance()
	// Bisection imbalances compound over log2 k levels; the k-way
	// refinement rebalances to the final bound afterwards.
	g0 := newWGraph(g, cons)
	if ml.Recursive {
		ub := math.Pow(1+eps, 1/float64(bits.Len(uint(k-1))))
		recursiveBisect(g0, k, ub, bisectTries, bisectCarried, rng, parts, 0)
	} else {
		tries := ml.Tries
		carry := ml.Carry
		if carry <= 0 {
			carry = kwayCarried
		}
		multilevelKway(g0, k, cons, eps, passes, tries, carry, rng, parts)
	}
	r := newKway(g0, parts, k, cons, eps)
	r.balance(rng)
	if ml.Recursive {
		r.refine(passes, rng)
	}
	r.fillEmpty()
	r.balance(rng)
	return parts, nil
}

// kway refines a k-way partition.
type kway struct {
	g     *wgraph
	k     int
	where []int32
	pw    []int64 // k*ncon part weights
	limit []int64 // per constraint: the most a part may carry
	floor []int64 // per constraint: the least a refinement move may leave
	count []int32 // vertices per part
	conn  []int64 // scratch: connectivity of one vertex to each part
	parts []int32 // scratch: parts touched by one vertex
	order []int32
	ncon  int
}

func newKway(g *wgraph, where []int32, k int, cons *constraints, eps float64) *kway {
	r := &kway{g: g, k: k, where: where, ncon: g.ncon, pw: make([]int64, k*g.ncon), limit: cons.limit,
		floor: make([]int64, g.ncon), count: make([]int32, k), conn: make([]int64, k)}
	for c := range r.floor {
		r.floor[c] = int64(float64(cons.total[c]) / float64(k) / (1 + eps))
	}
	for v, p := range where {
		r.count[p]++
		for c := 0; c < g.ncon; c++ {
			r.pw[int(p)*g.ncon+c] += int64(g.vw[v*g.ncon+c])
		}
	}
	return r
}

// fits reports whether part p can take v without exceeding a bound in a
// constraint v carries.
func (r *kway) fits(p int32, v int) bool {
	for c := 0; c < r.ncon; c++ {
		if w := int64(r.g.vw[v*r.ncon+c]); w > 0 && r.pw[int(p)*r.ncon+c]+w > r.limit[c] {
			return false
		}
	}
	return true
}

func (r *kway) canLeave(p int32, v int) bool {
	if r.count[p] <= 1 {
		return false
	}
	for c := 0; c < r.ncon; c++ {
		if w := int64(r.g.vw[v*r.ncon+c]); w > 0 && r.pw[int(p)*r.ncon+c]-w < r.floor[c] {
			return false
		}
	}
	return true
}

func (r *kway) over(p int32) bool {
	for c := 0; c < r.ncon; c++ {
		if r.pw[int(p)*r.ncon+c] > r.limit[c] {
			return true
		}
	}
	return false
}

// overage is how far a part weight w of constraint c is above its bound,
// relative to the bound.
func (r *kway) overage(w int64, c int) float64 {
	return float64(max(0, w-r.limit[c])) / float64(r.limit[c])
}

// delta is the change in total overage if v moved from a to b.
func (r *kway) delta(v int, a, b int32) float64 {
	d := 0.0
	for c := 0; c < r.ncon; c++ {
		w := int64(r.g.vw[v*r.ncon+c])
		if w == 0 {
			continue
		}
		pa, pb := r.pw[int(a)*r.ncon+c], r.pw[int(b)*r.ncon+c]
		d += r.overage(pa-w, c) - r.overage(pa, c) + r.overage(pb+w, c) - r.overage(pb, c)
	}
	return d
}

func (r *kway) move(v int, to int32) {
	from := r.where[v]
	for c := 0; c < r.ncon; c++ {
		w := int64(r.g.vw[v*r.ncon+c])
		r.pw[int(from)*r.ncon+c] -= w
		r.pw[int(to)*r.ncon+c] += w
	}
	r.count[from]--
	r.count[to]++
	r.where[v] = to
}

// connect fills conn with v's edge weight to each part and returns the parts
// touched; the caller clears them with release.
func (r *kway) connect(v int) []int32 {
	g := r.g
	r.parts = r.parts[:0]
	for j := g.xadj[v]; j < g.xadj[v+1]; j++ {
		u := g.adj[j]
		if int(u) == v {
			continue
		}
		p := r.where[u]
		if r.conn[p] == 0 {
			r.parts = append(r.parts, p)
		}
		r.conn[p] += int64(g.ew(j))
	}
	return r.parts
}

func (r *kway) release() {
	for _, p := range r.parts {
		r.conn[p] = 0
	}
}

func (r *kway) shuffle(rng *rand.Rand) []int32 {
	if len(r.order) != r.g.n {
		r.order = make([]int32, r.g.n)
		for i := range r.order {
			r.order[i] = int32(i)
		}
	}
	rng.Shuffle(len(r.order), func(i, j int) { r.order[i], r.order[j] = r.order[j], r.order[i] })
	return r.order
}

// refine makes greedy passes in random order, moving a boundary vertex to
// the neighbouring part it is most connected to when that lowers the cut
// (or keeps it and evens the weights) and the bounds allow it. The first
// pass visits every vertex; later ones only the neighbourhoods of the
// vertices the pass before moved, as nothing else can have changed.
func (r *kway) refine(passes int, rng *rand.Rand) {
	n := r.g.n
	mark := make([]bool, n)
	candidates := r.shuffle(rng)
	var next []int32
	for pass := 0; pass < passes && len(candidates) > 0; pass++ {
		next = next[:0]
		for _, v32 := range candidates {
			v := int(v32)
			a := r.where[v]
			touched := r.connect(v)
			if len(touched) == 0 || (len(touched) == 1 && touched[0] == a) || !r.canLeave(a, v) {
				r.release()
				continue
			}
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
			w0 := int64(r.g.vw[v*r.ncon])
			if bestConn > internal || (bestConn == internal && r.pw[int(best)*r.ncon]+w0 < r.pw[int(a)*r.ncon]) {
				r.move(v, best)
				for j := r.g.xadj[v]; j < r.g.xadj[v+1]; j++ {
					if u := r.g.adj[j]; !mark[u] {
						mark[u] = true
						next = append(next, u)
					}
				}
			}
		}
		if len(next) <= n/2000 {
			break
		}
		for _, u := range next {
			mark[u] = false
		}
		rng.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
		candidates, next = next, candidates[:0:0]
	}
}

// balance moves vertices out of parts above a bound while that lowers the
// total overage (summed over parts and constraints, relative to the bounds),
// each to the neighbouring part that costs the least cut or, when no
// neighbouring part helps, to the part that helps most. The overage falls
// with every move, so trades between constraints (a training node one way,
// an ordinary node the other) happen without cycling.
func (r *kway) balance(rng *rand.Rand) {
	const tiny = 1e-12
	for round := 0; round < 16; round++ {
		anyOver := false
		for p := 0; p < r.k; p++ {
			anyOver = anyOver || r.over(int32(p))
		}
		if !anyOver {
			return
		}
		moved := 0
		for _, v32 := range r.shuffle(rng) {
			v := int(v32)
			a := r.where[v]
			if !r.over(a) || r.count[a] <= 1 {
				continue
			}
			touched := r.connect(v)
			best, bestConn, bestDelta := int32(-1), int64(-1), 0.0
			for _, p := range touched {
				if p == a {
					continue
				}
				if d := r.delta(v, a, p); d < -tiny && (r.conn[p] > bestConn || (r.conn[p] == bestConn && d < bestDelta)) {
					best, bestConn, bestDelta = p, r.conn[p], d
				}
			}
			r.release()
			if best < 0 {
				for p := int32(0); int(p) < r.k; p++ {
					if d := r.delta(v, a, p); p != a && d < bestDelta-tiny {
						best, bestDelta = p, d
					}
				}
			}
			if best >= 0 {
				r.move(v, best)
				moved++
			}
		}
		if moved == 0 {
			return
		}
	}
}

// fillEmpty gives every empty part one vertex from the part with the most.
func (r *kway) fillEmpty() {
	for p := int32(0); int(p) < r.k; p++ {
		if r.count[p] > 0 {
			continue
		}
		var from int32
		for q := int32(0); int(q) < r.k; q++ {
			if r.count[q] > r.count[from] {
				from = q
			}
		}
		for v, q := range r.where {
			if q == from {
				r.move(v, p)
				break
			}
		}
	}
}

// checkSymmetricParallel is CheckSymmetric over all cores, screening
// first with edge hashes: the sum over all entries (v, u) of h(v, u) −
// h(u, v) is zero when every edge has its reverse, so only a nonzero sum
// needs the searches that name the missing edge. The screen streams
// through the rows once instead of searching a row per entry.
func checkSymmetricParallel(g *graph.Graph) error {
	chunks := min(4*parallel.Workers(), max(1, g.N/4096))
	bounds := make([]int, chunks+1)
	for c := range bounds {
		bounds[c] = int(int64(g.N) * int64(c) / int64(chunks))
	}
	t := &symTask{g: g, sum: make([]uint64, chunks), bounds: bounds}
	parallel.ForBounds(bounds, t)
	var sum uint64
	for _, s := range t.sum {
		sum += s
	}
	if sum != 0 {
		return CheckSymmetric(&graph.Graph{N: g.N, Offsets: g.Offsets, Neighbors: g.Neighbors}) // names the edge
	}
	return nil
}

type symTask struct {
	g      *graph.Graph
	bounds []int
	sum    []uint64
}

// edgeHash mixes an ordered pair (a multiply–xorshift of the packed pair).
func edgeHash(a, b int32) uint64 {
	x := (uint64(uint32(a))<<32 | uint64(uint32(b))) * 0x9e3779b97f4a7c15
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>32
}

func (t *symTask) Run(lo, hi int) {
	var s uint64
	for v := lo; v < hi; v++ {
		for _, u := range t.g.Adj(v) {
			s += edgeHash(int32(v), u) - edgeHash(u, int32(v))
		}
	}
	t.sum[searchBounds(t.bounds, lo)] = s
}
