package sample

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/prefetch"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// layer is one block of a batch and the storage it reuses.
type layer struct {
	block nn.Block
	src   []int32        // global ids of the sources, the destinations first
	op    tensor.CSR     // the operator the aggregation reads
	start []int64        // per destination: where its picked sources begin
	rowAt []candidateRow // per destination: where its candidates are (neighbour sampler)
	pick  []int32        // global ids of the picked sources, by destination
	vals  []float32      // their operator values (GCN, Mean)
	set   setLocalTask   // the parallel pass of setLocal, here so as not to allocate

	// The layer-wise samplers' draws (FastGCN, LADIES).
	drawn  []int32   // the distinct nodes drawn
	factor []float64 // per drawn node: c/(n·q), drawn c times of n with probability q
	count  []int32   // per destination: the drawn nodes it keeps
	keep   keepTask  // the parallel pass of layerwise.keep, here so as not to allocate
	cand   []int32   // LADIES: the candidates, the destinations' neighbours
	cum    []float64 // LADIES: the candidates' cumulative probability mass
}

// degrees holds, per node of the graph, what normalisation reads: 1/√d̂
// for the GCN operator, where d̂ counts the node's entries in A+I.
type degrees struct {
	invSqrt []float64
}

// selfValue returns the GCN self loop's value 1/d̂ of destination i of dst,
// for layer.build.
func (d degrees) selfValue(dst []int32) func(i int) float32 {
	return func(i int) float32 {
		isd := d.invSqrt[dst[i]]
		return float32(isd * isd)
	}
}

func newDegrees(g *graph.Graph) degrees {
	d := degrees{invSqrt: make([]float64, g.N)}
	for v := range g.N {
		n := g.Degree(v)
		if !hasSelfLoop(g, int32(v)) {
			n++
		}
		d.invSqrt[v] = 1 / math.Sqrt(float64(n))
	}
	return d
}

// rowFactor and colFactor factor the operator a layer-wise sampler
// estimates, and draws by: entry (v, u) is rowFactor(v)·colFactor(u), Â's
// 1/√d̂_v · 1/√d̂_u for GCN and attention (whose pattern is drawn as
// GCN's), the mean's 1/deg(v) · 1 for Mean (rowLen is v's stored degree).
func (d degrees) rowFactor(v int32, rowLen int, agg Aggregation) float64 {
	if agg == Mean {
		return 1 / float64(rowLen)
	}
	return d.invSqrt[v]
}

func (d degrees) colFactor(u int32, agg Aggregation) float64 {
	if agg == Mean {
		return 1
	}
	return d.invSqrt[u]
}

// hasSelfLoop reports whether v's sorted adjacency holds v.
func hasSelfLoop(g *graph.Graph, v int32) bool {
	for _, u := range g.Adj(int(v)) {
		if u >= v {
			return u == v
		}
	}
	return false
}

// candidates returns the neighbours a destination v may draw: for GCN and
// attention, every neighbour but v itself (its self loop is always kept);
// for the mean, v's row as the whole-graph mean operator reads it.
func candidates(g *graph.Graph, v int32, agg Aggregation) (adj []int32, skip int) {
	adj = g.Adj(int(v))
	if agg == Mean {
		return adj, -1
	}
	for i, u := range adj {
		if u >= v {
			if u == v {
				return adj, i
			}
			break
		}
	}
	return adj, -1
}

// build makes l the block whose destinations are dst (global ids) and whose
// other sources are the nodes picked for them, l.pick[l.start[i]:
// l.start[i+1]] for destination i, with operator values l.vals (GCN, Mean)
// and, for GCN, the self loop's value selfVal(i). It leaves in l.pick the
// picked nodes' local ids. local is scratch of one int32 per node of the
// graph, all zero, and left so.
func (l *layer) build(dst []int32, agg Aggregation, selfVal func(i int) float32, local []int32) error {
	l.src = append(l.src[:0], dst...)
	l.setLocal(local, dst, 1)
	l.src = localIDs(l.pick, l.src, local)
	self := agg != Mean // GCN and attention rows hold the destination itself
	n, picked := len(dst), len(l.pick)
	rows := picked
	if self {
		rows += n
	}
	op := l.shape(n, rows, agg)
	op.Offsets[0] = 0
	if !self {
		copy(op.Indices, l.pick)
		if op.Values != nil {
			copy(op.Values, l.vals)
		}
		copy(op.Offsets[1:], l.start[1:n+1])
	} else {
		at := int64(0)
		for i := range n {
			lo, hi := l.start[i], l.start[i+1]
			op.Indices[at] = int32(i)
			copy(op.Indices[at+1:], l.pick[lo:hi])
			if op.Values != nil {
				op.Values[at] = selfVal(i)
				copy(op.Values[at+1:], l.vals[lo:hi])
			}
			at += 1 + hi - lo
			op.Offsets[i+1] = at
		}
	}
	l.setLocal(local, l.src, 0)
	return l.reset(agg)
}

// localGroup is how many picks localIDs looks up at a time, and localAhead
// how many groups ahead it prefetches.
const localGroup, localAhead = 64, 2

// localIDs replaces every node of pick by its local id, 0-based: its
// position in src, where a node not there yet is appended, and returns
// src. local holds, per node of the graph, 1 + its position in src, or 0
// when not there. The picks' entries of local are cache misses, and the
// lookups in order depend on each other (a new node's id is the count of
// those before): the entries of a group of picks are prefetched a few
// groups ahead, so that their misses overlap each other and the lookups.
func localIDs(pick, src, local []int32) []int32 {
	for lo := 0; lo < min(len(pick), localAhead*localGroup); lo += localGroup {
		prefetch.Int32s(local, pick[lo:min(lo+localGroup, len(pick))])
	}
	for lo := 0; lo < len(pick); lo += localGroup {
		if ahead := lo + localAhead*localGroup; ahead < len(pick) {
			prefetch.Int32s(local, pick[ahead:min(ahead+localGroup, len(pick))])
		}
		group := pick[lo:min(lo+localGroup, len(pick))]
		for j, u := range group {
			id := local[u]
			if id == 0 {
				src = append(src, u)
				id = int32(len(src))
				local[u] = id
			}
			group[j] = id - 1
		}
	}
	return src
}

// setLocal sets local[nodes[i]] to 1+i when one is 1, to 0 when it is 0.
// The nodes are distinct, so threads set them side by side.
func (l *layer) setLocal(local, nodes []int32, one int32) {
	l.set = setLocalTask{local, nodes, one}
	parallel.For(len(nodes), 1<<14, &l.set)
	l.set = setLocalTask{}
}

type setLocalTask struct {
	local, nodes []int32
	one          int32
}

// Run sets the entries of nodes [lo, hi), prefetched a few groups ahead.
func (t *setLocalTask) Run(lo, hi int) {
	local, nodes := t.local, t.nodes[:hi]
	for a := lo; a < min(hi, lo+localAhead*localGroup); a += localGroup {
		prefetch.Int32s(local, nodes[a:min(a+localGroup, hi)])
	}
	for at := lo; at < hi; at += localGroup {
		if a := at + localAhead*localGroup; a < hi {
			prefetch.Int32s(local, nodes[a:min(a+localGroup, hi)])
		}
		for i, v := range nodes[at:min(at+localGroup, hi)] {
			local[v] = t.one * int32(at+i+1)
		}
	}
}

// shape sizes l.op for rows destinations and nnz entries, with values
// unless agg reads only the pattern, and returns it.
func (l *layer) shape(rows, nnz int, agg Aggregation) *tensor.CSR {
	op := &l.op
	op.Rows, op.Offsets = rows, growTo(op.Offsets, rows+1)
	op.Indices = growTo(op.Indices, nnz)
	if agg == Attention {
		op.Values = nil
	} else {
		op.Values = growTo(op.Values, nnz)
	}
	return op
}

// reset makes l.block the block of l.op, the operator agg reads, over the
// sources l.src.
func (l *layer) reset(agg Aggregation) error {
	op := &l.op
	op.Cols = len(l.src)
	var ops nn.Operators
	switch agg {
	case GCN:
		ops.GCN = op
	case Mean:
		ops.Mean = op
	case Attention:
		ops.Loops = op
	}
	return l.block.Reset(ops, l.src)
}

// growPicks sizes l.pick, and l.vals but for attention, to the l.start's
// last entry.
func (l *layer) growPicks(agg Aggregation) {
	n := int(l.start[len(l.start)-1])
	l.pick = growTo(l.pick, n)
	if agg != Attention {
		l.vals = growTo(l.vals, n)
	}
}

// growTo returns s with length n, reusing its storage when large enough.
func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// layerwise is what the layer-wise importance samplers (FastGCN, LADIES)
// share: the seeds of an epoch's batch are the last block's destinations,
// and each block draws nodes for its layer as a whole, not per
// destination, by a drawer; its sources are its destinations and the
// drawn nodes they read, and they are the next block down's destinations.
type layerwise struct {
	cfg   Config
	sizes []int // nodes drawn per layer, the seeds' layer first
	seeds *seedOrder
	deg   degrees
}

// drawer draws the nodes of one layer, n draws from the stream of key k
// for the destinations dst, whose rows are rows, into l.drawn (each
// distinct node once) and their importance factors into l.factor (tally).
// local is all zero, and is left so.
type drawer interface {
	draw(l *layer, dst []int32, rows rowSource, n int, k uint64, local []int32)
}

// rowSource gives the rows of a layer's destinations: destination i's
// (node v's) candidates as candidates returns them, the neighbours it may
// keep, and where v itself sits among them (-1: nowhere, or not to
// skip). A worker of a data-parallel run holds some rows and is sent the
// others (pickedRows).
type rowSource interface {
	row(i int, v int32) (adj []int32, skip int)
}

// graphRows are the rows of the graph, as agg reads them.
type graphRows struct {
	g   *graph.Graph
	agg Aggregation
}

func (r graphRows) row(_ int, v int32) ([]int32, int) { return candidates(r.g, v, r.agg) }

// pickedRows are rows drawn whole elsewhere: row i is the candidates of
// destination i, v itself left out already.
type pickedRows struct{ r *Rows }

func (p pickedRows) row(i int, _ int32) ([]int32, int) {
	return p.r.Pick[p.r.Start[i]:p.r.Start[i+1]], -1
}

func newLayerwise(cfg Config, sizes []int) layerwise {
	return layerwise{cfg: cfg, sizes: slices.Clone(sizes), seeds: dealt(cfg), deg: newDegrees(cfg.Graph)}
}

// parseSizes reads a layer-wise sampler's node counts, one per layer.
func parseSizes(args string, layers int) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(args, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > maxDraws {
			return nil, fmt.Errorf("layer size %q: want a positive number of nodes, at most 2³⁰", f)
		}
		sizes = append(sizes, v)
	}
	if len(sizes) != layers {
		return nil, fmt.Errorf("%d layer sizes for a model of %d layers; give one per layer", len(sizes), layers)
	}
	// A batch's draws, each a node (4 bytes) and, merged, its factor (8).
	draws := int64(0)
	for _, v := range sizes {
		draws += int64(v)
	}
	if err := roomForDraws(draws, 12, layerwiseBuffers, "batch", "batches"); err != nil {
		return nil, err
	}
	return sizes, nil
}

func (s *layerwise) Batches() int { return s.seeds.batches() }

// sample fills b with batch index of epoch, each layer's nodes drawn by d.
func (s *layerwise) sample(epoch, index int, b *Batch, d drawer) error {
	seeds, err := s.seeds.seeds(epoch, index)
	if err != nil {
		return err
	}
	return s.sampleSeeds(epoch, s.seeds.keyIndex(index), seeds, b, d)
}

// sampleSeeds fills b with the blocks of seeds in batch index of epoch,
// each layer's nodes drawn by d.
func (s *layerwise) sampleSeeds(epoch, index int, seeds []int32, b *Batch, d drawer) error {
	for _, v := range seeds {
		if v < 0 || int(v) >= s.cfg.Graph.N {
			return fmt.Errorf("sample: seed %d outside the graph's %d nodes", v, s.cfg.Graph.N)
		}
	}
	rows := graphRows{s.cfg.Graph, s.cfg.Aggregation}
	return sampleSeeds(&s.cfg, purposeNodes, epoch, index, seeds, b, func(l int, dst []int32, k uint64) error {
		ly := &b.layers[l]
		d.draw(ly, dst, rows, s.sizes[s.cfg.Layers-1-l], k, b.local)
		return s.keep(ly, dst, rows, b.local)
	})
}

// layerKey is the key of block l's draws of batch index of epoch.
func layerKey(seed uint64, epoch, index, l int) uint64 {
	return key(seed, purposeNodes, uint64(epoch), uint64(index), uint64(l))
}

// tally sorts the n draws in l.drawn and keeps each distinct value once,
// with the factor c/(n·prob(x)) of a value x drawn c times: the importance
// weight that makes (1/n)·Σ_draws f(x)/prob(x) an unbiased estimate of
// Σ_x f(x), summed over x's draws.
func (l *layer) tally(n int, prob func(x int32) float64) {
	slices.Sort(l.drawn)
	l.factor = l.factor[:0]
	k := 0
	for i := 0; i < n; {
		x, j := l.drawn[i], i+1
		for j < n && l.drawn[j] == x {
			j++
		}
		l.drawn[k] = x
		l.factor = append(l.factor, float64(j-i)/(float64(n)*prob(x)))
		k, i = k+1, j
	}
	l.drawn = l.drawn[:k]
}

// keep makes l the block of dst whose other sources are the drawn nodes
// among the destinations' neighbours: destination v keeps every drawn u of
// its row (not v itself for GCN and attention) at the operator's entry
// times u's factor, and the GCN self loop at Â's own entry, never drawn.
// A drawn node no destination reads is left out.
//
// One parallel pass over the rows finds them, each row writing into room
// for as many as it could keep (min(its degree, the nodes drawn)); a
// sequential pass then closes the gaps.
func (s *layerwise) keep(l *layer, dst []int32, rows rowSource, local []int32) error {
	s.keepRows(l, dst, rows, local)
	return l.build(dst, s.cfg.Aggregation, s.deg.selfValue(dst), local)
}

// keepRows is keep but for making the block: the kept entries are left in
// l.start, l.pick and l.vals.
func (s *layerwise) keepRows(l *layer, dst []int32, rows rowSource, local []int32) {
	for j, u := range l.drawn {
		local[u] = int32(j) + 1
	}
	agg, n := s.cfg.Aggregation, len(dst)
	l.start, l.count = growTo(l.start, n+1), growTo(l.count, n)
	l.start[0] = 0
	for i, v := range dst {
		adj, _ := rows.row(i, v)
		l.start[i+1] = l.start[i] + int64(min(len(adj), len(l.drawn)))
	}
	l.growPicks(agg)
	l.keep = keepTask{s: s, l: l, dst: dst, rows: rows, local: local}
	parallel.For(n, 64, &l.keep)
	for _, u := range l.drawn {
		local[u] = 0
	}
	at := int64(0)
	for i, k := range l.count {
		from := l.start[i]
		l.start[i] = at
		copy(l.pick[at:], l.pick[from:from+int64(k)])
		if agg != Attention {
			copy(l.vals[at:], l.vals[from:from+int64(k)])
		}
		at += int64(k)
	}
	l.start[n], l.pick = at, l.pick[:at]
	if agg != Attention {
		l.vals = l.vals[:at]
	}
}

// keepTask finds the drawn neighbours of destinations [lo, hi): row i's
// from l.start[i] on, their number into l.count[i].
type keepTask struct {
	s     *layerwise
	l     *layer
	dst   []int32
	rows  rowSource
	local []int32 // 1 + a drawn node's position in l.drawn
}

func (t *keepTask) Run(lo, hi int) {
	l := t.l
	for i := lo; i < hi; i++ {
		v := t.dst[i]
		adj, skip := t.rows.row(i, v)
		rf := t.s.deg.rowFactor(v, len(adj), t.s.cfg.Aggregation)
		at := l.start[i]
		if len(adj) > 8*len(l.drawn) {
			// A hub: search its row for the few drawn nodes rather than
			// look every neighbour up.
			for j, u := range l.drawn {
				if p, ok := slices.BinarySearch(adj, u); ok && p != skip {
					t.put(at, rf, u, j)
					at++
				}
			}
		} else {
			for p, u := range adj {
				if j := t.local[u]; j != 0 && p != skip {
					t.put(at, rf, u, int(j-1))
					at++
				}
			}
		}
		l.count[i] = int32(at - l.start[i])
	}
}

// put writes at position p the entry of drawn node j, u, in a row of
// factor rf.
func (t *keepTask) put(p int64, rf float64, u int32, j int) {
	l, agg := t.l, t.s.cfg.Aggregation
	l.pick[p] = u
	if agg != Attention {
		l.vals[p] = float32(l.factor[j] * rf * t.s.deg.colFactor(u, agg))
	}
}
