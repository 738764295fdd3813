package sample

import (
	"fmt"
	"math"
	"strings"

	"github.com/graft-gnn/graft/graph"
)

// PartNeighbor is the neighbour sampler of one worker of a data-parallel
// run over a partitioned graph: it holds the adjacency rows of the nodes
// the worker owns only, draws their neighbours for any worker that asks,
// and assembles a batch's blocks from rows drawn here and elsewhere.
// Because a node's draw is keyed by (seed, epoch, layer, node) alone (see
// Neighbor.Sample), the owner draws exactly the neighbours a sampler
// holding the whole graph would: the workers' blocks are the blocks of the
// whole graph's sampler for the same seeds.
type PartNeighbor struct {
	n *Neighbor
}

// PartGraph is what a worker holds of the graph for sampling: a graph of
// the whole graph's node count in which only the owned nodes' rows are
// filled (ascending global ids, as in the whole graph), and Degree, per
// node, its degree in A+I for every owned node and every neighbour of one
// (the GCN operator's normalisation; 0 for other nodes).
type PartGraph struct {
	Graph  *graph.Graph
	Degree []int32
}

// NewPartNeighbor returns the sampler of fanouts (one per layer, the
// seeds' first; -1 keeps every neighbour) over the worker's share pg, for
// a model of layers layers aggregating by agg, with seed keying the draws.
func NewPartNeighbor(pg PartGraph, fanouts []int, layers int, agg Aggregation, seed uint64) (*PartNeighbor, error) {
	if pg.Graph == nil || len(pg.Degree) != pg.Graph.N {
		return nil, fmt.Errorf("sample: a part's graph needs a degree per node")
	}
	if len(fanouts) != layers || layers < 1 {
		return nil, fmt.Errorf("sample: %d fanouts for a model of %d layers; give one per layer", len(fanouts), layers)
	}
	for _, f := range fanouts {
		if f == 0 || f < -1 {
			return nil, fmt.Errorf("sample: fanout %d: want a positive count or -1 (every neighbour)", f)
		}
	}
	s := NewNeighbor(Config{Graph: pg.Graph, Layers: layers, Aggregation: agg, Seed: seed}, fanouts)
	for v, d := range pg.Degree {
		if d > 0 {
			s.deg.invSqrt[v] = 1 / math.Sqrt(float64(d))
		} else {
			s.deg.invSqrt[v] = 0
		}
	}
	return &PartNeighbor{n: s}, nil
}

// PartSpec is a sampler's form as a data-parallel run over parts reads
// it: Kind is the sampler, and the other fields its arguments.
type PartSpec struct {
	Kind string
	// Sizes holds the neighbour sampler's fanouts or the layer-wise
	// samplers' nodes per layer, the seeds' layer first; RowNorm is
	// LADIES's rownorm.
	Sizes   []int
	RowNorm bool
	// Counts holds GraphSAINT's NODES, EDGES or ROOTS and LENGTH, and
	// Coverage its pre-sampling's.
	Counts   []int
	Coverage float64
	// Clusters, PerBatch and Method are Cluster-GCN's.
	Clusters, PerBatch int
	Method             string
}

// ParsePartSpec reads a sampler's form (KIND:ARGS) for a model of layers
// layers, checking its arguments as far as they can be without the
// graph.
func ParsePartSpec(spec string, layers int) (PartSpec, error) {
	spec = strings.ReplaceAll(spec, " ", "") // as New
	kind, args, _ := strings.Cut(spec, ":")
	ps := PartSpec{Kind: kind}
	var err error
	switch kind {
	case "neighbor":
		ps.Sizes, err = parseFanouts(args, layers)
	case "fastgcn":
		ps.Sizes, err = parseSizes(args, layers)
	case "ladies":
		var opt string
		args, opt, _ = strings.Cut(args, ":")
		if opt != "" && opt != "rownorm" {
			err = fmt.Errorf("option %q: want rownorm or nothing", opt)
		} else {
			ps.RowNorm = opt == "rownorm"
			ps.Sizes, err = parseSizes(args, layers)
		}
	case "saint-node":
		ps.Counts, ps.Coverage, err = parseSaint(args, "NODES")
	case "saint-edge":
		ps.Counts, ps.Coverage, err = parseSaint(args, "EDGES")
	case "saint-rw":
		ps.Counts, ps.Coverage, err = parseSaint(args, "ROOTS", "LENGTH")
		if err == nil && ps.Counts[0] > math.MaxInt32/(ps.Counts[1]+1) {
			err = fmt.Errorf("%d walks of %d steps visit more than 2³¹ nodes", ps.Counts[0], ps.Counts[1])
		}
	case "cluster":
		ps.Clusters, ps.PerBatch, ps.Method, err = parseCluster(args)
	default:
		return ps, SpecError{fmt.Errorf("unknown sampler %q (want %s)", spec, strings.Join(Forms(), "; "))}
	}
	if err != nil {
		return ps, SpecError{fmt.Errorf("sampler %s: %w", spec, err)}
	}
	return ps, nil
}

// Rows are the sampled rows of a list of destinations: row i's sources are
// Pick[Start[i]:Start[i+1]] (global ids) with the operator's values
// Vals[Start[i]:Start[i+1]] (none for attention, which reads the pattern
// only), and Self[i] is the GCN self loop's value.
type Rows struct {
	Start []int64
	Pick  []int32
	Vals  []float32
	Self  []float32

	rowAt []candidateRow // scratch of the neighbour sampler's draws
}

// Draw fills r with the rows of dst, nodes this worker owns, in block l
// (0 the input layer's) of epoch.
func (s *PartNeighbor) Draw(epoch, l int, dst []int32, r *Rows) error {
	g := s.n.cfg.Graph
	for _, v := range dst {
		if v < 0 || int(v) >= g.N {
			return fmt.Errorf("sample: node %d outside the graph's %d nodes", v, g.N)
		}
	}
	if l < 0 || l >= s.n.cfg.Layers {
		return fmt.Errorf("sample: block %d of a model of %d layers", l, s.n.cfg.Layers)
	}
	ly := layer{start: r.Start, pick: r.Pick, vals: r.Vals, rowAt: r.rowAt}
	s.n.rows(&ly, dst, s.n.fanouts[s.n.cfg.Layers-1-l], neighborKey(s.n.cfg.Seed, epoch, l))
	r.Start, r.Pick, r.Vals, r.rowAt = ly.start, ly.pick, ly.vals, ly.rowAt
	if s.n.cfg.Aggregation == Attention {
		r.Vals = r.Vals[:0]
	}
	self := s.n.deg.selfValue(dst)
	r.Self = growTo(r.Self, len(dst))
	for i := range dst {
		r.Self[i] = self(i)
	}
	return nil
}

// Layers is the number of blocks of the sampler's batches.
func (s *PartNeighbor) Layers() int { return s.n.cfg.Layers }

// SetLayer makes block l of b the block of destinations dst (global ids)
// with their rows r, however they were drawn; b is sized for the sampler's
// layers over the whole graph's nodes. Blocks are made from the last down,
// each one's destinations the sources of the one above (Sources).
func (s *PartNeighbor) SetLayer(b *Batch, l int, dst []int32, r *Rows) error {
	return b.SetBlock(s.n.cfg.Layers, s.n.cfg.Graph.N, s.n.cfg.Aggregation, l, dst, r)
}

// SetBlock makes block l of b, sized for layers blocks over a graph of n
// nodes, the block of destinations dst (global ids) with their rows r,
// however they were drawn, for a model aggregating by agg.
func (b *Batch) SetBlock(layers, nodes int, agg Aggregation, l int, dst []int32, r *Rows) error {
	n := len(dst)
	if l < 0 || l >= layers {
		return fmt.Errorf("sample: block %d of a batch of %d", l, layers)
	}
	if len(r.Start) != n+1 || len(r.Self) != n || r.Start[0] != 0 || r.Start[n] != int64(len(r.Pick)) ||
		(agg != Attention && len(r.Vals) != len(r.Pick)) {
		return fmt.Errorf("sample: rows of %d destinations do not match (%d starts, %d picks, %d values, %d self values)",
			n, len(r.Start), len(r.Pick), len(r.Vals), len(r.Self))
	}
	for _, v := range dst {
		if v < 0 || int(v) >= nodes {
			return fmt.Errorf("sample: destination %d outside the graph's %d nodes", v, nodes)
		}
	}
	for i := range n {
		if r.Start[i+1] < r.Start[i] {
			return fmt.Errorf("sample: rows' starts decrease at %d", i)
		}
	}
	for _, u := range r.Pick {
		if u < 0 || int(u) >= nodes {
			return fmt.Errorf("sample: picked node %d outside the graph's %d nodes", u, nodes)
		}
	}
	b.prepare(layers, nodes)
	ly := &b.layers[l]
	ly.start = append(ly.start[:0], r.Start...)
	ly.pick = append(ly.pick[:0], r.Pick...)
	ly.vals = append(ly.vals[:0], r.Vals...)
	return ly.build(dst, agg, func(i int) float32 { return r.Self[i] }, b.local)
}

// Sources returns block l's sources (global ids), its destinations first:
// the destinations of block l−1.
func (b *Batch) Sources(l int) []int32 { return b.layers[l].src }

// FinishSeeds completes a batch whose blocks SetLayer made: the seeds are
// the last block's destinations and every one's loss counts.
func (b *Batch) FinishSeeds(seeds []int32) { b.finishSeeds(seeds) }
