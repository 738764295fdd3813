package sample

import (
	"errors"
	"fmt"
)

// PartFastGCN is FastGCN (see there) on one worker of a data-parallel
// run over a partitioned graph. Every worker draws block l's nodes of
// batch index from the same key, and the probabilities q are the whole
// graph's (each worker adds its rows' share, FastGCNColumnMass, and the
// sums are shared): every worker draws the same nodes, as one process
// drawing for the workers' seeds together would. The owner of a
// destination keeps its row's drawn nodes (Draw), so the workers' blocks
// together are the blocks of one process's batch of their seeds.
type PartFastGCN struct {
	f *FastGCN
	// The draws of the block last asked for, which the worker's own block
	// and its answers to the others share.
	at    [3]int
	drawn layer
	keep  layer
	local []int32
}

// FastGCNColumnMass returns, per node u of the graph, the share of
// Σ_v rowFactor(v)² over the rows v that hold u (u ≠ v) that the rows of
// owned give: summed over the workers and times colFactor(u)², FastGCN's
// unnormalised q(u).
func FastGCNColumnMass(pg PartGraph, owned []int32, agg Aggregation) []float64 {
	g, deg := pg.Graph, partDegrees(pg)
	w := make([]float64, g.N)
	for _, v := range owned {
		adj, skip := candidates(g, v, agg)
		if len(adj) == 0 {
			continue
		}
		rf := deg.rowFactor(v, len(adj), agg)
		for p, u := range adj {
			if p != skip {
				w[u] += rf * rf
			}
		}
	}
	return w
}

// FastGCNColumnWeights returns, per node of owned, FastGCN's unnormalised
// q from mass, its FastGCNColumnMass summed over the workers.
func FastGCNColumnWeights(pg PartGraph, owned []int32, mass []float64, agg Aggregation) []float64 {
	deg := partDegrees(pg)
	q := make([]float64, len(owned))
	for i, u := range owned {
		cf := deg.colFactor(u, agg)
		q[i] = mass[i] * cf * cf
	}
	return q
}

// NewPartFastGCN returns the FastGCN sampler of sizes (one per layer, the
// seeds' first) over the worker's share pg, for a model of layers layers
// aggregating by agg, seed keying the draws; q holds every node's
// unnormalised probability, the same on every worker.
func NewPartFastGCN(pg PartGraph, sizes []int, layers int, agg Aggregation, seed uint64, q []float64) (*PartFastGCN, error) {
	if pg.Graph == nil || len(pg.Degree) != pg.Graph.N || len(q) != pg.Graph.N {
		return nil, errors.New("sample: a part's graph needs a degree and a probability per node")
	}
	if len(sizes) != layers || layers < 1 {
		return nil, fmt.Errorf("sample: %d layer sizes for a model of %d layers", len(sizes), layers)
	}
	cfg := Config{Graph: pg.Graph, BatchSize: 1, Layers: layers, Aggregation: agg, Seed: seed}
	f := &FastGCN{layerwise: layerwise{cfg: cfg, sizes: sizes, deg: partDegrees(pg)}, q: make([]float64, len(q))}
	total := 0.0
	for _, w := range q {
		total += w
	}
	if total > 0 {
		for u, w := range q {
			f.q[u] = w / total
		}
		f.table = newAlias(f.q)
	}
	return &PartFastGCN{f: f, at: [3]int{-1}, local: make([]int32, pg.Graph.N)}, nil
}

// Layers is the number of blocks of the sampler's batches.
func (s *PartFastGCN) Layers() int { return s.f.cfg.Layers }

// Draw fills r with the rows of dst, nodes this worker owns, in block l
// (0 the input layer's) of batch index of epoch: the drawn nodes of each
// one's row, weighted.
func (s *PartFastGCN) Draw(epoch, index, l int, dst []int32, r *Rows) error {
	if l < 0 || l >= s.f.cfg.Layers {
		return fmt.Errorf("sample: block %d of a model of %d layers", l, s.f.cfg.Layers)
	}
	if at := [3]int{epoch, index, l}; at != s.at {
		s.f.draw(&s.drawn, nil, nil, s.f.sizes[s.f.cfg.Layers-1-l], layerKey(s.f.cfg.Seed, epoch, index, l), nil)
		s.at = at
	}
	ly := &s.keep
	ly.drawn, ly.factor = s.drawn.drawn, s.drawn.factor
	s.f.keepRows(ly, dst, graphRows{s.f.cfg.Graph, s.f.cfg.Aggregation}, s.local)
	r.Start = append(r.Start[:0], ly.start...)
	r.Pick = append(r.Pick[:0], ly.pick...)
	r.Vals = r.Vals[:0]
	if s.f.cfg.Aggregation != Attention {
		r.Vals = append(r.Vals, ly.vals...)
	}
	self := s.f.deg.selfValue(dst)
	r.Self = growTo(r.Self, len(dst))
	for i := range dst {
		r.Self[i] = self(i)
	}
	return nil
}

// SetLayer makes block l of b the block of destinations dst with their
// rows r, drawn by their owners.
func (s *PartFastGCN) SetLayer(b *Batch, l int, dst []int32, r *Rows) error {
	return b.SetBlock(s.f.cfg.Layers, s.f.cfg.Graph.N, s.f.cfg.Aggregation, l, dst, r)
}

// PartLADIES is LADIES (see there) on one worker of a data-parallel run
// over a partitioned graph: a worker's blocks are drawn for its own
// destinations, from their neighbours, as one process draws for a batch
// of its seeds. The owners send the rows of the destinations the worker
// does not own (Candidates), and the importance weights read every node's
// degree, which the workers share once. Worker r of N draws batch i's
// nodes from the key of one process's batch i·N + r.
type PartLADIES struct{ s *LADIES }

// NewPartLADIES returns the LADIES sampler of sizes (one per layer, the
// seeds' first), its rows normalised as the paper's if rowNorm, over the
// worker's share pg; degree holds every node's degree in A+I, which the
// importance weights read.
func NewPartLADIES(pg PartGraph, degree []int32, sizes []int, rowNorm bool, layers int, agg Aggregation, seed uint64) (*PartLADIES, error) {
	if pg.Graph == nil || len(degree) != pg.Graph.N {
		return nil, errors.New("sample: LADIES over parts needs every node's degree")
	}
	if len(sizes) != layers || layers < 1 {
		return nil, fmt.Errorf("sample: %d layer sizes for a model of %d layers", len(sizes), layers)
	}
	for v, d := range degree {
		if d < 1 {
			return nil, fmt.Errorf("sample: node %d has degree %d in A+I", v, d)
		}
	}
	cfg := Config{Graph: pg.Graph, BatchSize: 1, Layers: layers, Aggregation: agg, Seed: seed}
	s := &LADIES{layerwise: layerwise{cfg: cfg, sizes: sizes, deg: partDegrees(PartGraph{Graph: pg.Graph, Degree: degree})}, rowNorm: rowNorm}
	return &PartLADIES{s: s}, nil
}

// Layers is the number of blocks of the sampler's batches.
func (p *PartLADIES) Layers() int { return p.s.cfg.Layers }

// Candidates fills r with the rows of dst, nodes this worker owns: each
// one's candidates, the neighbours LADIES may draw for it, without
// values.
func (p *PartLADIES) Candidates(dst []int32, r *Rows) error {
	g, agg := p.s.cfg.Graph, p.s.cfg.Aggregation
	r.Start, r.Pick, r.Vals, r.Self = append(r.Start[:0], 0), r.Pick[:0], r.Vals[:0], r.Self[:0]
	self := p.s.deg.selfValue(dst)
	for i, v := range dst {
		if v < 0 || int(v) >= g.N {
			return fmt.Errorf("sample: node %d outside the graph's %d nodes", v, g.N)
		}
		adj, skip := candidates(g, v, agg)
		for q, u := range adj {
			if q != skip {
				r.Pick = append(r.Pick, u)
			}
		}
		r.Start = append(r.Start, int64(len(r.Pick)))
		r.Self = append(r.Self, self(i))
	}
	return nil
}

// SetLayer draws block l of this worker's batch j of epoch (j = i·N + r
// for batch i of worker r of N) for the destinations dst from their rows
// r (Candidates, from their owners), and makes it block l of b.
func (p *PartLADIES) SetLayer(b *Batch, epoch, j, l int, dst []int32, r *Rows) error {
	s := p.s
	if l < 0 || l >= s.cfg.Layers {
		return fmt.Errorf("sample: block %d of a model of %d layers", l, s.cfg.Layers)
	}
	if len(r.Start) != len(dst)+1 || r.Start[len(dst)] != int64(len(r.Pick)) {
		return fmt.Errorf("sample: rows of %d destinations do not match", len(dst))
	}
	for _, u := range r.Pick {
		if u < 0 || int(u) >= s.cfg.Graph.N {
			return fmt.Errorf("sample: candidate %d outside the graph's %d nodes", u, s.cfg.Graph.N)
		}
	}
	b.prepare(s.cfg.Layers, s.cfg.Graph.N)
	ly, rows := &b.layers[l], pickedRows{r}
	s.draw(ly, dst, rows, s.sizes[s.cfg.Layers-1-l], layerKey(s.cfg.Seed, epoch, j, l), b.local)
	if err := s.keep(ly, dst, rows, b.local); err != nil {
		return err
	}
	if s.rowNorm && s.cfg.Aggregation != Attention {
		s.normalize(ly, rows)
	}
	return nil
}
