package sample

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	var fanouts []int
	for _, f := range strings.Split(args, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v == 0 || v < -1 {
			return nil, fmt.Errorf("fanout %q: want a positive count or -1 (every neighbour)", f)
		}
		fanouts = append(fanouts, v)
	}
	if len(fanouts) != cfg.Layers {
		return nil, fmt.Errorf("%d fanouts for a model of %d layers; give one per layer", len(fanouts), cfg.Layers)
	}
	return NewNeighbor(cfg, fanouts), nil
}

// NewNeighbor returns a neighbour sampler with one fanout per layer, the
// seeds' layer first (-1: every neighbour).
func NewNeighbor(cfg Config, fanouts []int) *Neighbor {
	return &Neighbor{cfg: cfg, fanouts: slices.Clone(fanouts), seeds: newSeedOrder(cfg.Train, cfg.BatchSize, cfg.Seed), deg: newDegrees(cfg.Graph)}
}

func (s *Neighbor) Batches() int { return s.seeds.batches() }

func (s *Neighbor) Sample(epoch, index int, b *Batch) error {
	seeds, err := s.seeds.seeds(epoch, index)
	if err != nil {
		return err
	}
	L := s.cfg.Layers
	b.prepare(L, s.cfg.Graph.N)
	dst := seeds
	for l := L - 1; l >= 0; l-- {
		k := key(s.cfg.Seed, purposeNeighbors, uint64(epoch), uint64(index), uint64(l))
		if err := s.layer(&b.layers[l], dst, s.fanouts[L-1-l], k, b.local); err != nil {
			return err
		}
		dst = b.layers[l].src
	}
	b.finish(seeds)
	b.Loss = b.Loss[:0]
	for i := range seeds {
		b.Loss = append(b.Loss, int32(i))
	}
	b.Weight = nil
	return nil
}

// layer builds the block of dst, each keeping up to fanout neighbours.
func (s *Neighbor) layer(l *layer, dst []int32, fanout int, k uint64, local []int32) error {
	g, agg := s.cfg.Graph, s.cfg.Aggregation
	n := len(dst)
	l.start = growTo(l.start, n+1)
	l.start[0] = 0
	for i, v := range dst {
		adj, skip := candidates(g, v, agg)
		d := len(adj)
		if skip >= 0 {
			d--
		}
		if fanout >= 0 {
			d = min(d, fanout)
		}
		l.start[i+1] = l.start[i] + int64(d)
	}
	l.pick = growTo(l.pick, int(l.start[n]))
	if agg != Attention {
		l.vals = growTo(l.vals, int(l.start[n]))
	}
	parallel.For(n, 256, pickTask{s: s, l: l, dst: dst, fanout: fanout, key: k})
	return l.build(dst, agg, func(i int) float32 {
		isd := s.deg.invSqrt[dst[i]]
		return float32(isd * isd)
	}, local)
}

// pickTask draws the neighbours of destinations [lo, hi).
type pickTask struct {
	s      *Neighbor
	l      *layer
	dst    []int32
	fanout int
	key    uint64
}

func (t pickTask) Run(lo, hi int) {
	g, agg, deg := t.s.cfg.Graph, t.s.cfg.Aggregation, t.s.deg
	var chosen []int
	for i := lo; i < hi; i++ {
		v := t.dst[i]
		adj, skip := candidates(g, v, agg)
		d := len(adj)
		if skip >= 0 {
			d--
		}
		at, k := t.l.start[i], int(t.l.start[i+1]-t.l.start[i])
		out := t.l.pick[at : at+int64(k)]
		if k == d {
			chosen = allPositions(chosen, d)
		} else {
			r := stream{mix(t.key ^ uint64(v))}
			chosen = choose(chosen, &r, d, k)
		}
		for j, c := range chosen {
			if skip >= 0 && c >= skip {
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
			scale := deg.invSqrt[v] * float64(d) / float64(k)
			for j, u := range out {
				t.l.vals[at+int64(j)] = float32(scale * deg.invSqrt[u])
			}
		}
	}
}

// allPositions returns 0, 1, …, d−1 in buf.
func allPositions(buf []int, d int) []int {
	buf = buf[:0]
	for c := range d {
		buf = append(buf, c)
	}
	return buf
}

// choose returns k distinct numbers of [0, d) (k < d), drawn uniformly, in
// ascending order: Floyd's algorithm, whose membership test is a scan of
// the at most k numbers chosen so far.
func choose(buf []int, r *stream, d, k int) []int {
	buf = buf[:0]
	for j := d - k; j < d; j++ {
		t := r.intn(j + 1)
		if slices.Contains(buf, t) {
			t = j
		}
		buf = append(buf, t)
	}
	slices.Sort(buf)
	return buf
}
