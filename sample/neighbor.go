package sample

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
)

func init() {
	Register("neighbor", "neighbor:F1,F2,... (one fanout per layer, the seeds' first as in PyG's NeighborLoader, which DGL's NeighborSampler lists the other way round; -1 keeps every neighbour)", newNeighbor)
}

// Neighbor is GraphSAGE's neighbour sampler: every destination of a layer
// keeps up to its fanout of its neighbours, drawn uniformly without
// replacement, and they are the next layer down's destinations. A sampled
// GCN row is rescaled by d/k (k of d neighbours kept), which makes it an
// unbiased estimate of the full row; a sampled mean is the mean over the
// kept neighbours. With every fanout -1 the blocks are the full
// neighbourhoods, and the model computes its whole-graph outputs.
type Neighbor struct {
	cfg     Config
	fanouts []int // fanouts[0] for the seeds' layer, the last for the input layer
	seeds   *seedOrder
	deg     degrees
}

func newNeighbor(args string, cfg Config) (Sampler, error) {
	fanouts, err := parseFanouts(args, cfg.Layers)
	if err != nil {
		return nil, err
	}
	return NewNeighbor(cfg, fanouts), nil
}

// parseFanouts reads a neighbour sampler's fanouts, one per layer.
func parseFanouts(args string, layers int) ([]int, error) {
	var fanouts []int
	for _, f := range strings.Split(args, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v == 0 || v < -1 {
			return nil, fmt.Errorf("fanout %q: want a positive count or -1 (every neighbour)", f)
		}
		fanouts = append(fanouts, v)
	}
	if len(fanouts) != layers {
		return nil, fmt.Errorf("%d fanouts for a model of %d layers; give one per layer", len(fanouts), layers)
	}
	return fanouts, nil
}

// NewNeighbor returns a neighbour sampler with one fanout per layer, the
// seeds' layer first (-1: every neighbour).
func NewNeighbor(cfg Config, fanouts []int) *Neighbor {
	return &Neighbor{cfg: cfg, fanouts: slices.Clone(fanouts), seeds: newSeedOrder(cfg.Train, cfg.BatchSize, cfg.Seed), deg: newDegrees(cfg.Graph)}
}

func (s *Neighbor) Batches() int { return s.seeds.batches() }

// Sample draws batch index of epoch. A node's neighbours in a layer are
// keyed by (seed, epoch, layer, node) and not by the batch: a node drawn
// into two batches of an epoch, or into the batches of two workers of a
// data-parallel run, keeps the same neighbours in both, so the workers'
// batches together are the batch of their seeds together.
func (s *Neighbor) Sample(epoch, index int, b *Batch) error {
	seeds, err := s.seeds.seeds(epoch, index)
	if err != nil {
		return err
	}
	return s.SampleSeeds(epoch, seeds, b)
}

// SampleSeeds fills b with the batch of the given seeds in epoch: the
// blocks Sample makes for a batch of those seeds.
func (s *Neighbor) SampleSeeds(epoch int, seeds []int32, b *Batch) error {
	for _, v := range seeds {
		if v < 0 || int(v) >= s.cfg.Graph.N {
			return fmt.Errorf("sample: seed %d outside the graph's %d nodes", v, s.cfg.Graph.N)
		}
	}
	b.prepare(s.cfg.Layers, s.cfg.Graph.N)
	dst := seeds
	for l := s.cfg.Layers - 1; l >= 0; l-- {
		if err := s.layer(&b.layers[l], dst, s.fanouts[s.cfg.Layers-1-l], neighborKey(s.cfg.Seed, epoch, l), b.local); err != nil {
			return err
		}
		dst = b.layers[l].src
	}
	b.finishSeeds(seeds)
	return nil
}

// neighborKey is the key of layer l's neighbour draws in epoch.
func neighborKey(seed uint64, epoch, l int) uint64 {
	return key(seed, purposeNeighbors, uint64(epoch), uint64(l))
}

// layer builds the block of dst, each keeping up to fanout neighbours.
func (s *Neighbor) layer(l *layer, dst []int32, fanout int, k uint64, local []int32) error {
	s.rows(l, dst, fanout, k)
	return l.build(dst, s.cfg.Aggregation, s.deg.selfValue(dst), local)
}

// rows draws the neighbours of dst into l.start, l.pick and l.vals.
func (s *Neighbor) rows(l *layer, dst []int32, fanout int, k uint64) {
	g, agg := s.cfg.Graph, s.cfg.Aggregation
	n := len(dst)
	l.start = growTo(l.start, n+1)
	l.start[0] = 0
	parallel.For(n, 1024, countTask{g: g, agg: agg, dst: dst, fanout: fanout, start: l.start})
	for i := range n {
		l.start[i+1] += l.start[i]
	}
	l.growPicks(agg)
	parallel.For(n, 256, pickTask{s: s, l: l, dst: dst, fanout: fanout, key: k})
}

// countTask sets start[i+1] to the number of neighbours destination i
// keeps. Reading the destinations' rows is a cache miss each, which the
// threads wait for side by side; the prefix sum after it is sequential.
type countTask struct {
	g      *graph.Graph
	agg    Aggregation
	dst    []int32
	fanout int
	start  []int64
}

func (t countTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		d := candidateCount(t.g, t.dst[i], t.agg)
		if t.fanout >= 0 {
			d = min(d, t.fanout)
		}
		t.start[i+1] = int64(d)
	}
}

// pickTask draws the neighbours of destinations [lo, hi).
type pickTask struct {
	s      *Neighbor
	l      *layer
	dst    []int32
	fanout int
	key    uint64
}

// Run draws in two passes: the first writes each destination's chosen
// positions in its adjacency (arithmetic only), the second turns them into
// node ids. The second pass's loads are independent of each other, so the
// CPU keeps many of their cache misses in flight; interleaved with the
// drawing, each destination's adjacency would be a miss waited for alone.
func (t pickTask) Run(lo, hi int) {
	g, agg, deg := t.s.cfg.Graph, t.s.cfg.Aggregation, t.s.deg
	var chosen []int
	for i := lo; i < hi; i++ {
		at, k := t.l.start[i], int(t.l.start[i+1]-t.l.start[i])
		out := t.l.pick[at : at+int64(k)]
		v := t.dst[i]
		d := candidateCount(g, v, agg)
		if k == d {
			for j := range out {
				out[j] = int32(j)
			}
			continue
		}
		r := stream{mix(t.key ^ uint64(v))}
		chosen = choose(chosen, &r, d, k)
		for j, c := range chosen {
			out[j] = int32(c)
		}
	}
	for i := lo; i < hi; i++ {
		at, k := t.l.start[i], int(t.l.start[i+1]-t.l.start[i])
		out := t.l.pick[at : at+int64(k)]
		v := t.dst[i]
		adj, skip := candidates(g, v, agg)
		for j, c := range out {
			if skip >= 0 && int(c) >= skip {
				c++
			}
			out[j] = adj[c]
		}
		switch agg {
		case Mean:
			w := float32(1 / float64(k))
			for j := range out {
				t.l.vals[at+int64(j)] = w
			}
		case GCN:
			// Â's entry, times d/k: an unbiased estimate of the full row.
			d := len(adj)
			if skip >= 0 {
				d--
			}
			scale := deg.invSqrt[v] * float64(d) / float64(k)
			for j, u := range out {
				t.l.vals[at+int64(j)] = float32(scale * deg.invSqrt[u])
			}
		}
	}
}

// candidateCount is the number of candidates(g, v, agg).
func candidateCount(g *graph.Graph, v int32, agg Aggregation) int {
	adj, skip := candidates(g, v, agg)
	if skip >= 0 {
		return len(adj) - 1
	}
	return len(adj)
}

// choose returns k distinct numbers of [0, d) (k < d), drawn uniformly, in
// ascending order: Floyd's algorithm, each number inserted in order as it
// is drawn, so that the membership test is a binary search. (Fanouts are
// small: the insertions cost less than sorting afterwards.)
func choose(buf []int, r *stream, d, k int) []int {
	buf = buf[:0]
	for j := d - k; j < d; j++ {
		t := r.intn(j + 1)
		at, found := slices.BinarySearch(buf, t)
		if found { // t was drawn before: j, larger than all so far, goes last
			buf = append(buf, j)
			continue
		}
		buf = slices.Insert(buf, at, t)
	}
	return buf
}
