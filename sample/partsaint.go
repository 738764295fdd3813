package sample

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// PartSaint is a GraphSAINT sampler (see Saint) of one worker of a
// data-parallel run over a partitioned graph. The worker holds its own
// nodes' rows only; it draws its subgraphs from its own part (the nodes of
// saint-node, the first end of every edge of saint-edge, the roots of
// saint-rw's walks, its own training nodes), and a walk that enters
// another part takes its steps there, at the owner, by the same keys as in
// one process: walkStepKey(k, w, s) alone picks step s of walk w. The
// caller moves the walks between owners (Step), and the subgraph's rows:
// every owner gives the rows of its nodes within the subgraph (Rows), with
// the normalisation of its own counts.
//
// Normalisation over parts. Pre-sampling draws subgraphs 0, 1, 2, …: a
// round of every drawing worker's subgraph, subgraph j drawn by the
// drawing worker j mod A (of A) from the key (seed, presample, sampler,
// j), until they hold COVERAGE times the graph's nodes, as in one
// process. The owner of a node counts, for the M subgraphs, C_v and
// C_{u,v} over its own rows (Mark, Count: it needs every subgraph that
// holds one of its nodes, whoever drew it). A training step is the A
// subgraphs the workers draw together; μ_v = Σ_w P(v ∈ G_w), the expected
// number of them holding v, is estimated as C_v·A/M, and node v's loss
// weight in any worker's subgraph is 1/(μ_v·|T|), so that the sum of the
// workers' weighted losses estimates the mean training loss:
// E[Σ_w Σ_{v ∈ G_w ∩ T} ℓ_v/(μ_v·|T|)] = (1/|T|) Σ_{v ∈ T} ℓ_v. The
// aggregator normalisation α_{u,v} = C_{u,v}/C_v is the conditional
// probability of the pooled subgraphs, those of a worker drawn at random.
// With one worker every figure is one process's.
type PartSaint struct {
	s      *Saint
	owned  []int32
	budget int
	walks  *walkDraw // saint-rw
	seed   uint64
	active int // A: the workers drawing subgraphs

	mask   []uint64 // per node, the group's subgraphs that hold it
	marked []int32
	local  []int32 // scratch of a node each, all zero between uses
	layer  layer
}

// NewPartSaint returns the GraphSAINT sampler spec (saint-node,
// saint-edge or saint-rw) of the worker holding pg, which owns owned
// (ascending global ids) and the training nodes train among them, of
// trainTotal training nodes in the whole graph. For saint-node, mass holds
// per owned node d̂_v·‖Â[:,v]‖² over the whole graph (ColumnMass summed
// over the workers). Pre-sampling is the caller's (Mark, Count,
// SetPresampled).
func NewPartSaint(pg PartGraph, spec PartSpec, owned, train []int32, trainTotal int, agg Aggregation, seed uint64, mass []float64) (*PartSaint, error) {
	if pg.Graph == nil || len(pg.Degree) != pg.Graph.N {
		return nil, errors.New("sample: a part's graph needs a degree per node")
	}
	g := pg.Graph
	train = slices.Clone(train)
	slices.Sort(train)
	train = slices.Compact(train)
	cfg := Config{Graph: g, Train: train, BatchSize: 1, Layers: 1, Aggregation: agg, Seed: seed}
	var budget int
	var purpose uint64
	switch spec.Kind {
	case "saint-node":
		budget, purpose = spec.Counts[0], purposeNodes
	case "saint-edge":
		budget, purpose = 2*spec.Counts[0], purposeEdges
	case "saint-rw":
		budget, purpose = spec.Counts[0]*spec.Counts[1], purposeWalks
	default:
		return nil, fmt.Errorf("sample: %s is not a GraphSAINT sampler", spec.Kind)
	}
	s := newSaint(cfg, purpose, budget)
	s.deg = partDegrees(pg)
	s.trainN = trainTotal
	s.nodeCount = make([]uint32, g.N)
	s.edgeCount = make([]uint32, g.NumEdges())
	ps := &PartSaint{s: s, owned: owned, budget: budget, seed: seed, mask: make([]uint64, g.N), local: make([]int32, g.N)}
	switch spec.Kind {
	case "saint-node":
		if len(mass) != len(owned) {
			return nil, fmt.Errorf("sample: %d column masses for %d nodes", len(mass), len(owned))
		}
		if len(owned) > 0 {
			w := make([]float64, len(owned))
			for i, v := range owned {
				w[i] = mass[i] * s.deg.invSqrt[v] * s.deg.invSqrt[v]
			}
			d := &nodeDraw{count: spec.Counts[0], ids: owned}
			d.prob, d.alias = aliasTable(w)
			s.draw = d
		}
	case "saint-edge":
		d := &edgeDraw{g: g, count: spec.Counts[0], ends: []int32{}}
		for _, v := range owned {
			if hasNeighbour(g, v) {
				d.ends = append(d.ends, v)
			}
		}
		if len(d.ends) > 0 {
			s.draw = d
		}
	case "saint-rw":
		ps.walks = &walkDraw{g: g, train: train, roots: spec.Counts[0], length: spec.Counts[1]}
		if len(train) > 0 {
			s.draw = ps.walks
		}
	}
	return ps, nil
}

// partDegrees is the degrees of what a worker holds (0 for nodes it does
// not know).
func partDegrees(pg PartGraph) degrees {
	d := degrees{invSqrt: make([]float64, len(pg.Degree))}
	for v, n := range pg.Degree {
		if n > 0 {
			d.invSqrt[v] = 1 / math.Sqrt(float64(n))
		}
	}
	return d
}

// ColumnMass returns, per node of the graph, the share of d̂_v·‖Â[:,v]‖²
// that the rows of owned give: Σ 1/d̂_u over those rows u of A+I that hold
// v. Summed over the workers it is the whole graph's (saint-node's
// weights before the factor 1/d̂_v).
func ColumnMass(pg PartGraph, owned []int32) []float64 {
	return columnMass(pg.Graph, partDegrees(pg), owned, make([]float64, pg.Graph.N))
}

// Draws reports whether this worker draws subgraphs: it has training
// nodes (saint-rw), a node with a neighbour (saint-edge), or a node
// (saint-node).
func (p *PartSaint) Draws() bool { return p.s.draw != nil }

// Budget is a subgraph's draws: NODES, 2·EDGES or ROOTS·LENGTH.
func (p *PartSaint) Budget() int { return p.budget }

// PresampleKey is the key of pre-sampling's subgraph j.
func (p *PartSaint) PresampleKey(j int) uint64 {
	return key(p.seed, purposePresample, p.s.purpose, uint64(j))
}

// BatchKey is the key of subgraph j of epoch: one process's batch j, and
// over N workers worker r's batch i is subgraph i·N + r.
func (p *PartSaint) BatchKey(epoch, j int) uint64 {
	return key(p.seed, p.s.purpose, uint64(epoch), uint64(j))
}

// Draw appends the nodes this worker draws for the subgraph of key k:
// all of them for saint-node and saint-edge, the walks' roots for
// saint-rw (whose steps Step takes). It appends nothing if the worker
// draws no subgraphs.
func (p *PartSaint) Draw(k uint64, out []int32) []int32 {
	switch {
	case p.s.draw == nil:
		return out
	case p.walks != nil:
		return p.walks.drawRoots(k, out)
	}
	return p.s.draw.draw(k, out)
}

// Walks is saint-rw's walks per subgraph and their steps (0 and 0 for
// the other samplers).
func (p *PartSaint) Walks() (roots, length int) {
	if p.walks == nil {
		return 0, 0
	}
	return p.walks.roots, p.walks.length
}

// StepKey is the key of step s (from 1) of walk w of the subgraph of key k.
func (p *PartSaint) StepKey(k uint64, w, s int) uint64 { return walkStepKey(k, w, s) }

// Step takes a walk's step of key k from v, a node this worker owns.
func (p *PartSaint) Step(v int32, k uint64) int32 { return walkStep(p.s.cfg.Graph, v, k) }

// Mark notes that subgraph j (0 to 63) of the group being counted holds
// nodes (global ids, each once).
func (p *PartSaint) Mark(j int, nodes []int32) error {
	if j < 0 || j >= presampleGroup {
		return fmt.Errorf("sample: subgraph %d of a group of %d", j, presampleGroup)
	}
	for _, v := range nodes {
		if v < 0 || int(v) >= len(p.mask) {
			return fmt.Errorf("sample: node %d outside the graph's %d nodes", v, len(p.mask))
		}
		if p.mask[v] == 0 {
			p.marked = append(p.marked, v)
		}
		p.mask[v] |= 1 << j
	}
	return nil
}

// Count adds the marked subgraphs to the counts of this worker's rows and
// clears the marks.
func (p *PartSaint) Count() {
	for _, v := range p.owned {
		p.s.countRow(v, p.mask, math.MaxUint64)
	}
	for _, v := range p.marked {
		p.mask[v] = 0
	}
	p.marked = p.marked[:0]
}

// SetPresampled records that pre-sampling counted m subgraphs, drawn by
// active workers.
func (p *PartSaint) SetPresampled(m, active int) { p.s.subgraphs, p.active = m, active }

// Presampled is the number of subgraphs pre-sampling counted.
func (p *PartSaint) Presampled() int { return p.s.subgraphs }

// Rows fills r with the rows of dst, nodes this worker owns, within the
// subgraph of nodes (ascending global ids, dst among them): each one's
// neighbours in it with the normalised operator's values, and its GCN
// self loop; weight gets each one's loss weight, 0 for a node that is not
// a training node.
func (p *PartSaint) Rows(dst, nodes []int32, r *Rows, weight []float32) ([]float32, error) {
	n := len(p.local)
	for i, v := range nodes {
		if v < 0 || int(v) >= n || (i > 0 && v <= nodes[i-1]) {
			return weight, fmt.Errorf("sample: a subgraph's nodes are not ascending ids of the graph's %d", n)
		}
	}
	in := localBitset(p.local)
	for _, v := range nodes {
		in.add(v)
	}
	defer in.clear(nodes)
	for _, v := range dst {
		if v < 0 || int(v) >= n || !in.has(v) {
			return weight, fmt.Errorf("sample: node %d is not in the subgraph", v)
		}
	}
	l := &p.layer
	p.s.rows(l, dst, in)
	r.Start = append(r.Start[:0], l.start...)
	r.Pick = append(r.Pick[:0], l.pick...)
	r.Vals = r.Vals[:0]
	if p.s.cfg.Aggregation != Attention {
		r.Vals = append(r.Vals, l.vals...)
	}
	self := p.s.deg.selfValue(dst)
	r.Self, weight = r.Self[:0], weight[:0]
	for i, v := range dst {
		r.Self = append(r.Self, self(i))
		w := float32(0)
		if p.s.train.has(v) {
			w = float32(float64(p.s.subgraphs) / float64(max(p.active, 1)) / (float64(max(p.s.nodeCount[v], 1)) * float64(p.s.trainN)))
		}
		weight = append(weight, w)
	}
	return weight, nil
}

// SetBatch makes b the batch of the subgraph of nodes (ascending global
// ids) with their rows r, from their owners' Rows, and their loss weights:
// one block serving every layer, the loss at the nodes of positive
// weight.
func (p *PartSaint) SetBatch(b *Batch, nodes []int32, r *Rows, weight []float32) error {
	if len(weight) != len(nodes) {
		return fmt.Errorf("sample: %d loss weights for %d nodes", len(weight), len(nodes))
	}
	if err := b.SetBlock(1, len(p.local), p.s.cfg.Aggregation, 0, nodes, r); err != nil {
		return err
	}
	b.finish(nodes)
	b.Loss, b.Weight = b.Loss[:0], b.Weight[:0]
	for i, w := range weight {
		if w > 0 {
			b.Loss = append(b.Loss, int32(i))
			b.Weight = append(b.Weight, w)
		}
	}
	return nil
}
