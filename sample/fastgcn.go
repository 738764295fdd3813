package sample

func init() {
	Register("fastgcn", "fastgcn:N1,N2,... (FastGCN: N nodes drawn per layer, the seeds' layer first, from the whole graph with replacement, by the operator's squared column norms)", newFastGCN)
}

// FastGCN is the layer-wise importance sampler of Chen, Ma and Xiao
// (ICLR 2018): the seeds of a batch are the last layer's destinations, and
// each layer below makes n independent draws (n its size in the form) from
// the whole graph, independently of the layer above, node u with
// probability q(u) ∝ ‖Â[:,u]‖². The draws are with replacement, as in the
// paper: with the weights below the estimate is then unbiased for any n,
// which drawing without replacement would not keep. Entry (v ← u) of a
// block is c·Â_vu/(n·q(u)) for u drawn c times, so each sampled row is an
// unbiased estimate of the full row Â[v,:]·H. A drawn node no destination
// reads is left out of the block, and a layer's nodes are the layer
// above's (a block's destinations come first among its sources) and those
// drawn, so the blocks of an L-layer model have at most seeds + n_1 + … +
// n_L sources.
//
// Self terms. As the destinations are sources, a destination's own row of
// H is at hand: the self loop Â_vv enters every GCN row exactly, never
// drawn (as in the neighbour sampler), and q is the column norm without
// the diagonal, Σ_{v≠u} Â_vu², the mass of what is drawn. With Â's
// diagonal in q, a node of no edge would have the largest norm (1) and
// take draws that no row reads.
//
// What each model gets:
//   - GCN: Â = D^-1/2 (A+I) D^-1/2 with global degrees, as above;
//   - SAGE (Mean): the mean's entries 1/deg(v) in place of Â's, drawn by
//     the mean's squared column norms Σ_v 1/deg(v)², with the same
//     importance factors: an unbiased estimate of the neighbours' mean
//     (an empty row, when no neighbour is drawn, estimates it as zero);
//   - GAT (Attention): the pattern only, drawn as for GCN: each row is the
//     self loop and the drawn neighbours, since weights cannot enter a
//     softmax; the attention over a sample is not an unbiased estimate.
//
// The column norms are computed once, in one pass over the edges, into an
// alias table (20 bytes per node with q itself), so a draw costs O(1).
type FastGCN struct {
	layerwise
	q     []float64 // per node: its probability
	table alias
}

func newFastGCN(args string, cfg Config) (Sampler, error) {
	sizes, err := parseSizes(args, cfg.Layers)
	if err != nil {
		return nil, err
	}
	return NewFastGCN(cfg, sizes), nil
}

// NewFastGCN returns a FastGCN sampler drawing sizes[i] nodes for the
// i-th layer below the seeds.
func NewFastGCN(cfg Config, sizes []int) *FastGCN {
	s := &FastGCN{layerwise: newLayerwise(cfg, sizes)}
	g, agg := cfg.Graph, cfg.Aggregation
	s.q = make([]float64, g.N)
	for v := range int32(g.N) {
		adj, skip := candidates(g, v, agg)
		if len(adj) == 0 {
			continue
		}
		rf := s.deg.rowFactor(v, len(adj), agg)
		for p, u := range adj {
			if p != skip {
				s.q[u] += rf * rf
			}
		}
	}
	total := 0.0
	for u, w := range s.q {
		cf := s.deg.colFactor(int32(u), agg)
		s.q[u] = w * cf * cf
		total += s.q[u]
	}
	if total > 0 {
		for u := range s.q {
			s.q[u] /= total
		}
		s.table = newAlias(s.q)
	}
	return s
}

func (s *FastGCN) Sample(epoch, index int, b *Batch) error {
	return s.sample(epoch, index, b, s)
}

// SampleSeeds fills b with the blocks of the given seeds in batch index of
// epoch: the blocks Sample makes for a batch of those seeds, the nodes of
// every layer drawn for the batch as a whole.
func (s *FastGCN) SampleSeeds(epoch, index int, seeds []int32, b *Batch) error {
	return s.sampleSeeds(epoch, index, seeds, b, s)
}

func (s *FastGCN) draw(l *layer, _ []int32, _ rowSource, n int, k uint64, _ []int32) {
	if s.table.prob == nil { // no edges: nothing to draw
		l.drawn, l.factor = l.drawn[:0], l.factor[:0]
		return
	}
	l.drawn = growTo(l.drawn, n)
	r := stream{k}
	for i := range l.drawn {
		l.drawn[i] = s.table.draw(&r)
	}
	l.tally(n, func(u int32) float64 { return s.q[u] })
}

// alias is Walker's alias table (Vose's construction): column i is kept
// with probability prob[i] and gives way to alias[i] otherwise.
type alias struct {
	prob  []float64
	alias []int32
}

// newAlias returns the table of the distribution p (summing to 1).
func newAlias(p []float64) alias {
	n := len(p)
	a := alias{prob: make([]float64, n), alias: make([]int32, n)}
	// small grows from the front of work, large from the back.
	work := make([]int32, n)
	small, large := 0, n
	for i, w := range p {
		a.prob[i] = w * float64(n)
		if a.prob[i] < 1 {
			work[small] = int32(i)
			small++
		} else {
			large--
			work[large] = int32(i)
		}
	}
	for small > 0 && large < n {
		s, g := work[small-1], work[large]
		small--
		a.alias[s] = g
		a.prob[g] -= 1 - a.prob[s]
		if a.prob[g] < 1 {
			large++
			work[small] = g
			small++
		}
	}
	for ; small > 0; small-- { // rounding: what is left is full
		a.prob[work[small-1]] = 1
	}
	for ; large < n; large++ {
		a.prob[work[large]] = 1
	}
	return a
}

func (a *alias) draw(r *stream) int32 {
	i := r.intn(len(a.prob))
	if r.float() < a.prob[i] {
		return int32(i)
	}
	return a.alias[i]
}
