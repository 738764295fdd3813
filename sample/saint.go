package sample

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
)

func init() {
	const coverage = "; COVERAGE (default 50, the authors' sample_coverage) sets how many subgraphs are pre-sampled to estimate the normalisation: until they hold COVERAGE times the graph's nodes"
	Register("saint-node", "saint-node:NODES[:COVERAGE] (GraphSAINT's node sampler: NODES draws with replacement ∝ ‖Â[:,v]‖², the subgraph they induce"+coverage+")", newSaintNode)
	Register("saint-edge", "saint-edge:EDGES[:COVERAGE] (GraphSAINT's edge sampler: EDGES draws of an edge (u, v) ∝ 1/deg(u) + 1/deg(v), the subgraph their ends induce"+coverage+")", newSaintEdge)
	Register("saint-rw", "saint-rw:ROOTS:LENGTH[:COVERAGE] (GraphSAINT's random-walk sampler: ROOTS walks of LENGTH steps from training nodes drawn uniformly, the subgraph they visit and induce"+coverage+")", newSaintWalk)
}

// DefaultCoverage is GraphSAINT's sample_coverage as every configuration of
// the authors' Table 2 sets it (train_config/table2/*.yml in
// GraphSAINT/GraphSAINT): pre-sampling draws subgraphs until they hold 50
// times as many nodes as the graph has.
const DefaultCoverage = 50

// Saint is a GraphSAINT sampler (Zeng et al., ICLR 2020): each mini-batch
// is the subgraph G_s that a set of randomly drawn nodes induces, and the
// model runs on it with all its layers. The batch has one block whose
// destinations and sources are G_s's nodes in ascending id order; its
// operator holds every stored edge between them (and, for GCN and
// attention, every node's self loop).
//
// Three ways to draw the nodes (Zeng et al.'s Section 3.4):
//   - saint-node:B draws B nodes with replacement, node v with probability
//     ∝ ‖Â[:,v]‖², Â = D^-1/2 (A+I) D^-1/2 the GCN operator, whatever the
//     model (every node has a positive one, through its self loop);
//   - saint-edge:E draws E edges with replacement, an undirected edge
//     {u, v} with probability ∝ 1/deg(u) + 1/deg(v) (degrees without self
//     loops), and takes their ends: drawn as a node u uniform among the
//     nodes with a neighbour, then a neighbour v of u uniform, which for a
//     symmetric adjacency gives edge {u, v} probability
//     (1/deg(u) + 1/deg(v)) / |nodes with a neighbour| (for a directed
//     one, u → v gets 1/(deg_out(u)·|…|)). Isolated nodes are never drawn;
//   - saint-rw:R:L draws R roots uniformly among the training nodes (with
//     replacement) and walks L steps from each, every step to a uniform
//     neighbour other than the node itself (a walk at a node with none
//     stays there), and takes the nodes visited.
//
// Normalisation. When it is made, the sampler draws N subgraphs
// (pre-sampling) and counts C_v, the subgraphs that hold node v, and
// C_{u,v}, for every stored edge (v reads u: u at position p of v's row),
// the subgraphs that hold both u and v (so that the edge is in them), in
// one uint32 per stored edge. With c_v = max(C_v, 1) and
// c_{u,v} = max(C_{u,v}, 1) (a count that pre-sampling never saw is taken
// as 1, which keeps the weights below N; the authors clip 1/α at 10⁴ and
// take an unseen node's count as 0.1):
//   - loss normalisation: the training nodes of G_s are its loss rows, node
//     v's Weight N / (c_v·|T|) (|T| the distinct training nodes): that is
//     1/(λ_v·|T|) with λ_v = C_v/N, so that
//     E[Σ_{v ∈ G_s ∩ T} Weight_v·ℓ_v] = Σ_{v ∈ T} P(v ∈ G_s)/λ_v · ℓ_v/|T|,
//     the mean training loss (1/|T|) Σ_{v ∈ T} ℓ_v when λ_v = P(v ∈ G_s),
//     as the authors' norm_loss_train = N / C_v / |T|;
//   - aggregator normalisation: entry (v, u), u ≠ v, is Ã_{v,u}/α_{u,v} with
//     α_{u,v} = c_{u,v}/c_v, the estimate of P((u, v) ∈ G_s | v ∈ G_s): for
//     GCN 1/√(d̂_v·d̂_u) · c_v/c_{u,v} (d̂ counting the self loop, global
//     degrees), for the mean 1/deg(v) · c_v/c_{u,v} (deg(v) v's stored
//     row length, as the whole graph's mean operator); the self loop of
//     GCN keeps 1/d̂_v (α = 1: v is in G_s whenever v is), and a stored
//     self loop of the mean has C_{v,v} = C_v. Then
//     E[row v of the operator · x | v ∈ G_s] = Σ_u Ã_{v,u}·x_u, the whole
//     graph's row, when α is exact;
//   - attention (GAT) gets the pattern of G_s's A+I only: attention
//     coefficients are a softmax over a row's entries, which sums to 1
//     whatever the row holds, so no weight can enter them; GAT's loss is
//     normalised, its aggregation is not.
//
// Pre-sampling draws subgraphs 0, 1, 2, … from the keys (seed, presample,
// sampler, i) and stops at the first N with Σ_{i<N} |V(G_i)| >
// COVERAGE·|V|: each node is then in COVERAGE subgraphs on average. The
// authors stop after the round (200 subgraphs) in which the sampled nodes
// pass sample_coverage times the training nodes, which in their setting
// are all the nodes a sampler can draw (it runs on the training graph);
// PyG's GraphSAINTSampler counts the graph's nodes, as here. It works a
// group of 64 subgraphs at a time: drawn in parallel, a subgraph each,
// marking a bit per subgraph in each node's mask; then counted in parallel
// over the rows, a node's row read once for all the group's subgraphs that
// hold it (C_v grows by the bits of its mask, C_{u,v} by the bits the two
// masks share), so that no count is shared between threads and none
// depends on them. A group costs the draws, a pass over the masks, and the
// rows of the nodes its subgraphs hold.
//
// An epoch has ⌈|T|/budget⌉ batches, the authors' num_training_batches, with
// the budget B (node), 2·E (edge) or R·L (random walk); batch i of epoch e
// is drawn from the key (seed, sampler, e, i), independently of every other.
type Saint struct {
	cfg     Config
	draw    subgraphDraw
	purpose uint64 // keys the batches
	batches int
	deg     degrees
	train   bitset // the training nodes
	trainN  int    // |T|: the distinct training nodes

	subgraphs int      // N: the subgraphs pre-sampling drew
	nodeCount []uint32 // C_v
	edgeCount []uint32 // C_{u,v} at u's position in v's row of the graph
}

// subgraphDraw draws the nodes of one subgraph.
type subgraphDraw interface {
	// draw appends to out the nodes drawn from the stream of key k, with
	// repeats.
	draw(k uint64, out []int32) []int32
}

func newSaintNode(args string, cfg Config) (Sampler, error) {
	n, coverage, err := parseSaint(args, "NODES")
	if err != nil {
		return nil, err
	}
	return NewSaintNode(cfg, n[0], coverage), nil
}

func newSaintEdge(args string, cfg Config) (Sampler, error) {
	n, coverage, err := parseSaint(args, "EDGES")
	if err != nil {
		return nil, err
	}
	return NewSaintEdge(cfg, n[0], coverage)
}

func newSaintWalk(args string, cfg Config) (Sampler, error) {
	n, coverage, err := parseSaint(args, "ROOTS", "LENGTH")
	if err != nil {
		return nil, err
	}
	if n[0] > math.MaxInt32/(n[1]+1) {
		return nil, fmt.Errorf("%d walks of %d steps visit more than 2³¹ nodes", n[0], n[1])
	}
	return NewSaintWalk(cfg, n[0], n[1], coverage), nil
}

// parseSaint reads args as the positive counts named, then an optional
// positive coverage.
func parseSaint(args string, names ...string) (counts []int, coverage float64, err error) {
	fields := strings.Split(args, ":")
	want := strings.Join(names, ":") + "[:COVERAGE]"
	if len(fields) != len(names) && len(fields) != len(names)+1 {
		return nil, 0, fmt.Errorf("%d fields; want %s", len(fields), want)
	}
	for i, name := range names {
		v, err := strconv.Atoi(fields[i])
		if err != nil || v < 1 || v > maxDraws {
			return nil, 0, fmt.Errorf("%s %q: want a count from 1 to 2³⁰", name, fields[i])
		}
		counts = append(counts, v)
	}
	draws := int64(counts[0]) // a subgraph's nodes drawn: NODES, 2·EDGES or ROOTS·(LENGTH+1)
	switch names[0] {
	case "EDGES":
		draws *= 2
	case "ROOTS":
		draws *= int64(counts[1]) + 1
	}
	if err := roomForDraws(draws, 4, saintBuffers, "subgraph", "subgraphs"); err != nil {
		return nil, 0, err
	}
	coverage = DefaultCoverage
	if len(fields) > len(names) {
		c, err := strconv.ParseFloat(fields[len(names)], 64)
		if err != nil || !(c > 0) || math.IsInf(c, 0) {
			return nil, 0, fmt.Errorf("COVERAGE %q: want a positive number", fields[len(names)])
		}
		coverage = c
	}
	return counts, coverage, nil
}

// NewSaintNode returns GraphSAINT's node sampler: nodes draws per subgraph,
// pre-sampling to coverage (DefaultCoverage is the authors').
func NewSaintNode(cfg Config, nodes int, coverage float64) *Saint {
	s := newSaint(cfg, purposeNodes, nodes)
	s.draw = newNodeDraw(cfg.Graph, s.deg, nodes)
	s.presample(coverage)
	return s
}

// NewSaintEdge returns GraphSAINT's edge sampler: edges draws per subgraph,
// pre-sampling to coverage. A graph with no edge but self loops has
// nothing to draw.
func NewSaintEdge(cfg Config, edges int, coverage float64) (*Saint, error) {
	s := newSaint(cfg, purposeEdges, 2*edges)
	d, err := newEdgeDraw(cfg.Graph, edges)
	if err != nil {
		return nil, err
	}
	s.draw = d
	s.presample(coverage)
	return s, nil
}

// NewSaintWalk returns GraphSAINT's random-walk sampler: roots walks of
// length steps per subgraph, pre-sampling to coverage.
func NewSaintWalk(cfg Config, roots, length int, coverage float64) *Saint {
	s := newSaint(cfg, purposeWalks, roots*length)
	s.draw = &walkDraw{g: cfg.Graph, train: s.train.members(), roots: roots, length: length}
	s.presample(coverage)
	return s
}

func newSaint(cfg Config, purpose uint64, budget int) *Saint {
	cfg = cfg.fixedShare()
	s := &Saint{cfg: cfg, purpose: purpose, deg: newDegrees(cfg.Graph), train: newBitset(cfg.Graph.N)}
	for _, v := range cfg.Train {
		if !s.train.has(v) {
			s.train.add(v)
			s.trainN++
		}
	}
	s.batches = (s.trainN + budget - 1) / budget
	return s
}

func (s *Saint) Batches() int { return s.batches }

// Presampled is the number of subgraphs pre-sampling drew (N).
func (s *Saint) Presampled() int { return s.subgraphs }

func (s *Saint) Sample(epoch, index int, b *Batch) error {
	if index < 0 || index >= s.batches {
		return fmt.Errorf("sample: batch %d of an epoch of %d", index, s.batches)
	}
	b.prepare(1, s.cfg.Graph.N)
	// The nodes are drawn into b.Output, which keeps the storage and ends
	// up holding the distinct ones.
	b.Output = s.draw.draw(key(s.cfg.Seed, s.purpose, uint64(epoch), uint64(index)), b.Output[:0])
	slices.Sort(b.Output)
	nodes := slices.Compact(b.Output)
	if err := s.induce(&b.layers[0], nodes, b.local); err != nil {
		return err
	}
	b.finish(nodes)
	b.Loss, b.Weight = b.Loss[:0], b.Weight[:0]
	for i, v := range nodes {
		if s.train.has(v) {
			b.Loss = append(b.Loss, int32(i))
			b.Weight = append(b.Weight, float32(float64(s.subgraphs)/(float64(max(s.nodeCount[v], 1))*float64(s.trainN))))
		}
	}
	return nil
}

// induce builds l as the subgraph nodes induce, with the normalised
// operator values. local is the batch's scratch, all zero, and left so.
func (s *Saint) induce(l *layer, nodes []int32, local []int32) error {
	in := localBitset(local)
	for _, v := range nodes {
		in.add(v)
	}
	s.rows(l, nodes, in)
	in.clear(nodes)
	return l.build(nodes, s.cfg.Aggregation, s.deg.selfValue(nodes), local)
}

// rows writes into l.start, l.pick and l.vals the rows of dst within the
// subgraph in: each node's neighbours in it, with the normalised operator
// values.
func (s *Saint) rows(l *layer, dst []int32, in bitset) {
	g, n, nodes := s.cfg.Graph, len(dst), dst
	// One pass over the rows, in parallel: node i's picks go to
	// l.pick[l.start[i]:], where its whole row would fit, ended by -1 when
	// fewer; then they are packed.
	l.start = growTo(l.start, n+1)
	l.start[0] = 0
	for i, v := range nodes {
		l.start[i+1] = l.start[i] + int64(g.Degree(int(v)))
	}
	values := s.cfg.Aggregation != Attention
	l.pick = growTo(l.pick, int(l.start[n]))
	if values {
		l.vals = growTo(l.vals, int(l.start[n]))
	}
	parallel.For(n, 256, &saintRowsTask{s: s, l: l, nodes: nodes, in: in})
	at, lo := int64(0), l.start[0]
	for i := range n {
		hi := l.start[i+1]
		l.start[i] = at
		for p := lo; p < hi && l.pick[p] >= 0; p++ {
			l.pick[at] = l.pick[p]
			if values {
				l.vals[at] = l.vals[p]
			}
			at++
		}
		lo = hi
	}
	l.start[n] = at
	l.pick = l.pick[:at]
	if values {
		l.vals = l.vals[:at]
	}
}

// saintRowsTask writes, for the subgraph's nodes [lo, hi), their neighbours
// in the subgraph (in) and their operator values, each row's from
// l.start[i], ended by -1 if it does not fill the row.
type saintRowsTask struct {
	s     *Saint
	l     *layer
	nodes []int32
	in    bitset
}

func (t *saintRowsTask) Run(lo, hi int) {
	g, agg, isd := t.s.cfg.Graph, t.s.cfg.Aggregation, t.s.deg.invSqrt
	for i := lo; i < hi; i++ {
		v := t.nodes[i]
		first, end := g.Offsets[v], g.Offsets[v+1]
		// Ã_{v,u}/α_{u,v} = Ã_{v,u}·c_v/c_{u,v}: scale is Ã_{v,u}·c_v but
		// for GCN's factor 1/√d̂_u.
		scale := float64(max(t.s.nodeCount[v], 1))
		switch agg {
		case GCN:
			scale *= isd[v]
		case Mean:
			scale /= float64(end - first)
		}
		at := t.l.start[i]
		for p := first; p < end; p++ {
			u := g.Neighbors[p]
			if !t.in.has(u) || u == v && agg != Mean {
				continue
			}
			t.l.pick[at] = u
			if agg != Attention {
				w := scale / float64(max(t.s.edgeCount[p], 1))
				if agg == GCN {
					w *= isd[u]
				}
				t.l.vals[at] = float32(w)
			}
			at++
		}
		if at < t.l.start[i+1] {
			t.l.pick[at] = -1
		}
	}
}

// presample draws the subgraphs that estimate the normalisation and counts
// them into nodeCount and edgeCount, a group of 64 at a time: each node's
// mask has bit j set when subgraph j of the group holds it, so that a row
// is read once for all the group's subgraphs that hold its node, and
// C_{u,v} grows by the bits mask_u & mask_v share.
func (s *Saint) presample(coverage float64) {
	g := s.cfg.Graph
	s.nodeCount = make([]uint32, g.N)
	s.edgeCount = make([]uint32, g.NumEdges())
	t := &presampleTask{s: s, mask: make([]uint64, g.N)}
	target, sampled := coverage*float64(g.N), 0.0
	for sampled <= target {
		t.phase = drawSubgraphs
		parallel.For(presampleGroup, 1, t)
		m := 0
		for m < presampleGroup && sampled <= target {
			sampled += float64(t.sizes[m])
			m++
		}
		t.keep = math.MaxUint64 >> (presampleGroup - m) // the subgraphs that count
		t.phase = countRows
		parallel.For(g.N, 1024, t)
		t.phase = unmarkSubgraphs
		parallel.For(presampleGroup, 1, t)
		t.first += m
	}
	s.subgraphs = t.first
}

// presampleGroup is the number of subgraphs pre-sampling draws and counts
// at a time, a bit of a uint64 each: a constant, so that what it draws does
// not depend on the threads.
const presampleGroup = 64

// presampleTask runs a phase of pre-sampling over [lo, hi): subgraphs
// first+j of the group, or nodes.
type presampleTask struct {
	s     *Saint
	phase int
	first int                     // the group's first subgraph
	draws [presampleGroup][]int32 // the nodes each subgraph drew, with repeats
	sizes [presampleGroup]int     // and how many distinct
	mask  []uint64                // per node, the group's subgraphs that hold it
	keep  uint64                  // the group's subgraphs that count
}

const (
	drawSubgraphs   = iota // draw subgraphs [lo, hi) and set their bits in mask
	countRows              // count rows [lo, hi)
	unmarkSubgraphs        // clear the mask of subgraphs [lo, hi)'s nodes
)

func (t *presampleTask) Run(lo, hi int) {
	s := t.s
	switch t.phase {
	case drawSubgraphs:
		for j := lo; j < hi; j++ {
			t.draws[j] = s.draw.draw(key(s.cfg.Seed, purposePresample, s.purpose, uint64(t.first+j)), t.draws[j][:0])
			t.sizes[j] = 0
			for _, v := range t.draws[j] {
				if atomic.OrUint64(&t.mask[v], 1<<j)&(1<<j) == 0 {
					t.sizes[j]++
				}
			}
		}
	case countRows:
		for v := lo; v < hi; v++ {
			s.countRow(int32(v), t.mask, t.keep)
		}
	case unmarkSubgraphs:
		for _, draws := range t.draws[lo:hi] {
			for _, v := range draws {
				atomic.StoreUint64(&t.mask[v], 0)
			}
		}
	}
}

// countRow adds to the counts of row v the subgraphs of keep that mask
// marks: C_v grows by those that hold v, C_{u,v} by those that hold u too.
func (s *Saint) countRow(v int32, mask []uint64, keep uint64) {
	mv := mask[v] & keep
	if mv == 0 {
		return
	}
	g := s.cfg.Graph
	s.nodeCount[v] += uint32(bits.OnesCount64(mv))
	first := g.Offsets[v]
	counts := s.edgeCount[first:g.Offsets[v+1]]
	for j, u := range g.Neighbors[first:g.Offsets[v+1]] {
		if both := mv & mask[u]; both != 0 {
			counts[j] += uint32(bits.OnesCount64(both))
		}
	}
}

// bitset is a set of nodes, a bit each, in int32 words so that a batch's
// scratch (Batch.local, an int32 per node, all zero) can hold one in its
// first words.
type bitset []int32

func newBitset(n int) bitset { return make(bitset, (n+31)/32) }

// localBitset returns an empty bitset of the graph's nodes in the first
// words of a batch's scratch.
func localBitset(local []int32) bitset { return bitset(local[:(len(local)+31)/32]) }

func (b bitset) has(v int32) bool { return b[v>>5]&(1<<(v&31)) != 0 }
func (b bitset) add(v int32)      { b[v>>5] |= 1 << (v & 31) }

// clear empties b, whose members are among nodes.
func (b bitset) clear(nodes []int32) {
	for _, v := range nodes {
		b[v>>5] = 0
	}
}

func (b bitset) members() (m []int32) {
	for w, word := range b {
		for x := uint32(word); x != 0; x &= x - 1 {
			m = append(m, int32(w*32+bits.TrailingZeros32(x)))
		}
	}
	return m
}

// nodeDraw draws count nodes with replacement, v with probability ∝
// ‖Â[:,v]‖², from an alias table (Walker, Vose): O(1) a draw.
type nodeDraw struct {
	prob  []float64 // column v is kept with probability prob[v]…
	alias []int32   // …and gives alias[v] otherwise
	ids   []int32   // the node of each column; nil: column v is node v
	count int
}

func newNodeDraw(g *graph.Graph, deg degrees, count int) *nodeDraw {
	w := columnMass(g, deg, nil, make([]float64, g.N))
	for v := range w {
		w[v] *= deg.invSqrt[v] * deg.invSqrt[v]
	}
	d := &nodeDraw{count: count}
	d.prob, d.alias = aliasTable(w)
	return d
}

// columnMass adds to w, per node v, Σ 1/d̂_u over the rows u of A+I that
// hold v, for the rows of rows (nil: every row of g): d̂_v·‖Â[:,v]‖².
func columnMass(g *graph.Graph, deg degrees, rows []int32, w []float64) []float64 {
	add := func(u int32) {
		a := deg.invSqrt[u] * deg.invSqrt[u]
		w[u] += a // the self loop of A+I, once
		for _, v := range g.Adj(int(u)) {
			if v != u {
				w[v] += a
			}
		}
	}
	if rows == nil {
		for u := range int32(g.N) {
			add(u)
		}
	}
	for _, u := range rows {
		add(u)
	}
	return w
}

func (d *nodeDraw) draw(k uint64, out []int32) []int32 {
	r := stream{k}
	for range d.count {
		v := int32(r.intn(len(d.prob)))
		if r.float() >= d.prob[v] {
			v = d.alias[v]
		}
		if d.ids != nil {
			v = d.ids[v]
		}
		out = append(out, v)
	}
	return out
}

// aliasTable returns Vose's alias table of the distribution ∝ w (positive
// weights): outcome v is drawn as a uniform column c, kept with
// probability prob[c] and replaced by alias[c] otherwise.
func aliasTable(w []float64) (prob []float64, alias []int32) {
	n := len(w)
	total := 0.0
	for _, x := range w {
		total += x
	}
	prob, alias = make([]float64, n), make([]int32, n)
	var small, large []int32
	for v, x := range w {
		prob[v] = x * float64(n) / total
		if prob[v] < 1 {
			small = append(small, int32(v))
		} else {
			large = append(large, int32(v))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		alias[s] = l
		prob[l] -= 1 - prob[s]
		if prob[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, v := range large { // 1 but for rounding
		prob[v], alias[v] = 1, v
	}
	for _, v := range small {
		prob[v], alias[v] = 1, v
	}
	return prob, alias
}

// neighbour returns a uniform neighbour of v other than v itself, or false
// when v has none.
func neighbour(g *graph.Graph, v int32, r *stream) (int32, bool) {
	if !hasNeighbour(g, v) {
		return v, false
	}
	adj := g.Adj(int(v))
	for { // a row holds v at most once: rejecting it is uniform on the others
		if u := adj[r.intn(len(adj))]; u != v {
			return u, true
		}
	}
}

// hasNeighbour reports whether v has a neighbour other than itself.
func hasNeighbour(g *graph.Graph, v int32) bool {
	adj := g.Adj(int(v))
	return len(adj) > 1 || len(adj) == 1 && adj[0] != v
}

// edgeDraw draws count edges, each as a node u uniform among those with a
// neighbour and a uniform neighbour of u.
type edgeDraw struct {
	g     *graph.Graph
	ends  []int32 // the nodes with a neighbour other than themselves; nil when every node has one
	count int
}

func newEdgeDraw(g *graph.Graph, count int) (*edgeDraw, error) {
	d := &edgeDraw{g: g, count: count}
	for v := range int32(g.N) {
		if hasNeighbour(g, v) {
			d.ends = append(d.ends, v)
		}
	}
	if len(d.ends) == 0 {
		return nil, fmt.Errorf("the graph has no edge between two nodes")
	}
	if len(d.ends) == g.N {
		d.ends = nil
	}
	return d, nil
}

func (d *edgeDraw) draw(k uint64, out []int32) []int32 {
	r := stream{k}
	for range d.count {
		var u int32
		if d.ends == nil {
			u = int32(r.intn(d.g.N))
		} else {
			u = d.ends[r.intn(len(d.ends))]
		}
		v, _ := neighbour(d.g, u, &r)
		out = append(out, u, v)
	}
	return out
}

// walkDraw draws roots random walks of length steps from training nodes.
type walkDraw struct {
	g             *graph.Graph
	train         []int32
	roots, length int
}

// draw takes a step of every walk before the next step of any, so that the
// walks' memory accesses overlap; a walk at a node without a neighbour
// stays there. The roots come from the stream of k, and step s of walk w
// from the stream of walkStepKey(k, w, s) alone: whoever holds the node a
// walk is at can take its step (a worker of a data-parallel run, for a
// walk that entered its part).
func (d *walkDraw) draw(k uint64, out []int32) []int32 {
	out = d.drawRoots(k, out)
	for s := 1; s <= d.length; s++ {
		last := len(out) - d.roots
		for w := range d.roots {
			out = append(out, walkStep(d.g, out[last+w], walkStepKey(k, w, s)))
		}
	}
	return out
}

// drawRoots appends the walks' roots, drawn from the stream of k.
func (d *walkDraw) drawRoots(k uint64, out []int32) []int32 {
	r := stream{k}
	for range d.roots {
		out = append(out, d.train[r.intn(len(d.train))])
	}
	return out
}

// walkStepKey is the key of step s (from 1) of walk w of the subgraph of
// key k.
func walkStepKey(k uint64, w, s int) uint64 { return key(k, uint64(w), uint64(s)) }

// walkStep is the step from v drawn from the stream of key k: a uniform
// neighbour other than v, or v when it has none.
func walkStep(g *graph.Graph, v int32, k uint64) int32 {
	r := stream{k}
	u, _ := neighbour(g, v, &r)
	return u
}
