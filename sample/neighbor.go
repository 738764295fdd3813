package sample

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/prefetch"
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
	return &Neighbor{cfg: cfg, fanouts: slices.Clone(fanouts), seeds: dealt(cfg), deg: newDegrees(cfg.Graph)}
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
	l.start, l.rowAt = growTo(l.start, n+1), growTo(l.rowAt, n)
	l.start[0] = 0
	parallel.For(n, 1024, countTask{g: g, agg: agg, dst: dst, fanout: fanout, start: l.start, rows: l.rowAt})
	for i := range n {
		l.start[i+1] += l.start[i]
	}
	l.growPicks(agg)
	parallel.For(n, 256, pickTask{s: s, l: l, dst: dst, key: k})
}

// countTask finds where the candidates of destination i are, into rows[i],
// and sets start[i+1] to the number of them it keeps. Reading the
// destinations' row bounds is a cache miss each: they are prefetched two
// groups of 64 ahead, so that many are in flight, and the threads wait for
// them side by side; the prefix sum after it is sequential.
type countTask struct {
	g      *graph.Graph
	agg    Aggregation
	dst    []int32
	fanout int
	start  []int64
	rows   []candidateRow
}

func (t countTask) Run(lo, hi int) {
	dst := t.dst[:hi]
	for i := lo; i < hi; i++ {
		if (i-lo)%localGroup == 0 {
			if a := i + localAhead*localGroup; a < hi {
				prefetch.Int64s(t.g.Offsets, dst[a:min(a+localGroup, hi)])
			}
		}
		row := rowOf(t.g, dst[i], t.agg)
		t.rows[i] = row
		d := int(row.d)
		if t.fanout >= 0 {
			d = min(d, t.fanout)
		}
		t.start[i+1] = int64(d)
	}
}

// pickTask draws the neighbours of destinations [lo, hi).
type pickTask struct {
	s   *Neighbor
	l   *layer
	dst []int32
	key uint64
}

// pickGroup is how many destinations pickTask handles at a time.
const pickGroup = 128

// Run draws a group of destinations at a time, in two passes: the first
// writes each one's chosen positions in its candidates (arithmetic only),
// the second turns them into node ids. The second pass's loads are
// independent of each other, so the CPU keeps many of their cache misses
// in flight; interleaved with the drawing, each destination's row would
// be a miss waited for alone.
func (t pickTask) Run(lo, hi int) {
	for at := lo; at < hi; at += pickGroup {
		t.group(at, min(at+pickGroup, hi))
	}
}

// candidateRow is where a destination's candidates are in the graph's
// neighbour lists: from the position at, d of them, the position skip
// (relative to at) left out when it is not noSkip.
type candidateRow struct {
	at      int64
	d, skip int32
}

// noSkip is candidateRow.skip when no position is left out: past every
// candidate.
const noSkip = math.MaxInt32

// group draws the neighbours of destinations [lo, hi).
func (t pickTask) group(lo, hi int) {
	dst, rows := t.dst[lo:hi], t.l.rowAt[lo:hi]
	start, pick := t.l.start[lo:hi+1], t.l.pick
	for i, v := range dst {
		out := pick[start[i]:start[i+1]]
		if d := int(rows[i].d); len(out) == d {
			for j := range out {
				out[j] = int32(j)
			}
		} else {
			r := stream{mix(t.key ^ uint64(v))}
			choose(out, &r, d)
		}
	}
	nbr := t.s.cfg.Graph.Neighbors
	for i, row := range rows {
		out := pick[start[i]:start[i+1]]
		for j, c := range out {
			if c >= row.skip {
				c++
			}
			out[j] = nbr[row.at+int64(c)]
		}
	}
	t.values(lo, rows)
}

// values writes the operator values of the picks of the destinations from
// at on, one per row.
func (t pickTask) values(at int, rows []candidateRow) {
	l, deg := t.l, t.s.deg
	switch t.s.cfg.Aggregation {
	case Mean:
		for i := range rows {
			lo, hi := l.start[at+i], l.start[at+i+1]
			w := float32(1 / float64(hi-lo))
			vals := l.vals[lo:hi]
			for j := range vals {
				vals[j] = w
			}
		}
	case GCN:
		for i, row := range rows {
			lo, hi := l.start[at+i], l.start[at+i+1]
			// Â's entry, times d/k: an unbiased estimate of the full row.
			scale := deg.invSqrt[t.dst[at+i]] * float64(row.d) / float64(hi-lo)
			vals := l.vals[lo:hi]
			for j, u := range l.pick[lo:hi] {
				vals[j] = float32(scale * deg.invSqrt[u])
			}
		}
	}
}

// rowOf is where candidates(g, v, agg) are.
func rowOf(g *graph.Graph, v int32, agg Aggregation) candidateRow {
	adj, skip := candidates(g, v, agg)
	row := candidateRow{at: g.Offsets[v], d: int32(len(adj)), skip: noSkip}
	if skip >= 0 {
		row.d, row.skip = row.d-1, int32(skip)
	}
	return row
}

// choose writes into out k = len(out) distinct numbers of [0, d) (k < d),
// drawn uniformly, in ascending order: Floyd's algorithm, for j from d−k
// to d−1, t drawn from [0, j] joins the set, or j does if t is in it
// already. The set is a bitset on the stack when d is small enough, as it
// is for most rows; otherwise a sorted list, each number inserted in order
// as it is drawn so that the membership test is a binary search.
func choose(out []int32, r *stream, d int) {
	k := len(out)
	if d > 64*chooseWords {
		chooseSorted(out, r, d)
		return
	}
	var set [chooseWords]uint64
	words := set[:(d+63)/64]
	for j := uint(d - k); j < uint(d); j++ {
		t := uint(r.intn(int(j) + 1))
		if words[t/64]&(1<<(t%64)) != 0 {
			t = j
		}
		words[t/64] |= 1 << (t % 64)
	}
	at := 0
	for w, word := range words {
		for word != 0 {
			out[at] = int32(64*w + bits.TrailingZeros64(word))
			word &= word - 1
			at++
		}
	}
}

// chooseWords bounds the rows choose draws from by a bitset: 64 numbers a
// word.
const chooseWords = 16

// chooseSorted is choose for any d, the set a sorted list.
func chooseSorted(out []int32, r *stream, d int) {
	buf := out[:0]
	for j := d - len(out); j < d; j++ {
		t := int32(r.intn(j + 1))
		at, found := slices.BinarySearch(buf, t)
		if found { // t was drawn before: j, larger than all so far, goes last
			buf = append(buf, int32(j))
			continue
		}
		buf = slices.Insert(buf, at, t)
	}
}
