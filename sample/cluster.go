package sample

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/partition"
)

func init() {
	Register("cluster", "cluster:PARTS:PER_BATCH[:METHOD] (Cluster-GCN: the graph cut once into PARTS clusters by METHOD, one of "+
		strings.Join(partition.Methods(), ", ")+", multilevel when not given; each batch the subgraph induced by PER_BATCH clusters, every cluster once an epoch)", newCluster)
}

// Cluster is Cluster-GCN's sampler (Chiang et al., KDD 2019, with their
// stochastic multiple partitions). When made, it cuts the graph into
// clusters with one of graft's partitioners (the multilevel one unless
// another is named), seeded by the sampler's seed and balancing the
// training nodes across clusters as well as the nodes. An epoch deals
// the clusters, in an order drawn from (seed, epoch), into batches of
// PER_BATCH (the last may have fewer), so it visits every cluster, and
// every node, once. A batch is the subgraph induced by its clusters'
// nodes: the edges between two of its clusters are restored, the edges
// leaving the batch dropped. It is one block, its destinations and its
// sources the same nodes, that serves every layer of the model; the loss
// counts at the batch's training nodes, with a plain mean (Weight nil), as
// Cluster-GCN's does. A batch whose clusters hold no training node has no
// loss rows.
//
// Normalisation is the batch's own: the GCN operator is D^-1/2 (A+I) D^-1/2
// of the induced subgraph, its degrees counting a node's neighbours within
// the batch and the self loop, and the mean is over a node's neighbours
// within the batch. That is what Cluster-GCN's reference code does (it
// normalises every batch's adjacency) and what PyG's Cluster-GCN examples
// do (gcn_norm on each subgraph). Global degrees would shrink each row by
// the share of the node's neighbours outside the batch, a share that
// depends on how its cluster was cut and that nothing rescales (Cluster-GCN
// does not estimate the full rows); with the batch's own degrees every row
// has the whole graph's form, so the model trains on operators like the
// one it is evaluated on, and a batch of every cluster is the whole
// graph's operator exactly. The paper's diagonal enhancement is not
// offered: its row-normalised (D+I)^-1 (A+I) + λ·diag differs from the
// operator the GCN layers and whole-graph evaluation use. Attention
// (GAT) gets the induced pattern with a self loop in every row.
type Cluster struct {
	cfg   Config
	start []int   // cluster c holds the nodes at positions start[c] to start[c+1]
	nodes []int32 // the node at each position: the clusters' node lists
	// The graph's adjacency in the clusters' order, and by position: the
	// neighbours of the node at position p are at positions
	// adj[offsets[p]:offsets[p+1]], in the graph's order. A batch's rows
	// are then a few runs of memory, and the neighbours within a cluster a
	// short stretch of the batch's index table.
	offsets []int64
	adj     []int32
	train   []uint64 // bit p is set when the node at position p is a training node
	order   *seedOrder
}

func newCluster(args string, cfg Config) (Sampler, error) {
	parts, perBatch, method, err := parseCluster(args)
	if err != nil {
		return nil, err
	}
	return NewCluster(cfg, parts, perBatch, method)
}

// parseCluster reads PARTS:PER_BATCH[:METHOD].
func parseCluster(args string) (parts, perBatch int, method string, err error) {
	fields := strings.Split(args, ":")
	if len(fields) < 2 || len(fields) > 3 {
		return 0, 0, "", fmt.Errorf("want PARTS:PER_BATCH[:METHOD]")
	}
	var counts [2]int
	for i, f := range fields[:2] {
		v, err := strconv.Atoi(f)
		if err != nil {
			return 0, 0, "", fmt.Errorf("%q is not a count", f)
		}
		counts[i] = v
	}
	method = "multilevel"
	if len(fields) == 3 {
		method = fields[2]
	}
	switch {
	case counts[0] < 1:
		return 0, 0, "", fmt.Errorf("%d clusters; want at least 1", counts[0])
	case counts[1] < 1 || counts[1] > counts[0]:
		return 0, 0, "", fmt.Errorf("%d clusters per batch of %d; want 1 to %d", counts[1], counts[0], counts[0])
	}
	if _, err := partition.New(method); err != nil {
		return 0, 0, "", err
	}
	return counts[0], counts[1], method, nil
}

// NewCluster returns a Cluster-GCN sampler of batches of perBatch clusters
// of parts, the graph's partition into parts by method (a name
// partition.New accepts). It partitions the graph, so it takes the
// partitioner's time (the multilevel and METIS partitioners need the
// graph undirected), and keeps a copy of the adjacency in the clusters'
// order: 4 bytes per stored edge and 12 per node.
func NewCluster(cfg Config, parts, perBatch int, method string) (*Cluster, error) {
	cfg = cfg.fixedShare()
	g := cfg.Graph
	switch {
	case parts < 1:
		return nil, fmt.Errorf("%d clusters; want at least 1", parts)
	case parts > g.N:
		return nil, fmt.Errorf("%d clusters of a graph of %d nodes; want at most one per node", parts, g.N)
	case perBatch < 1 || perBatch > parts:
		return nil, fmt.Errorf("%d clusters per batch of %d; want 1 to %d", perBatch, parts, parts)
	}
	p, err := partition.New(method)
	if err != nil {
		return nil, err
	}
	balance := make([]int32, g.N)
	for _, v := range cfg.Train {
		balance[v] = 1
	}
	assign, err := p.Partition(g, parts, partition.Options{Seed: cfg.Seed, Balance: balance})
	if err != nil {
		return nil, err
	}
	if err := partition.CheckAssignment(assign, g.N, parts); err != nil {
		return nil, err
	}
	s := &Cluster{cfg: cfg, start: make([]int, parts+1), nodes: make([]int32, g.N)}
	for _, c := range assign { // a counting sort of the nodes by cluster
		s.start[c+1]++
	}
	for c := range parts {
		s.start[c+1] += s.start[c]
	}
	pos := slices.Clone(s.start[:parts]) // each cluster's next free position
	for v, c := range assign {
		s.nodes[pos[c]] = int32(v)
		pos[c]++
	}
	position := assign // reused: each node's position
	for k, v := range s.nodes {
		position[v] = int32(k)
	}
	s.offsets = make([]int64, g.N+1)
	for k, v := range s.nodes {
		s.offsets[k+1] = s.offsets[k] + int64(g.Degree(int(v)))
	}
	s.adj = make([]int32, s.offsets[g.N])
	parallel.For(g.N, 1024, &permuteTask{s: s, position: position})
	s.train = make([]uint64, (g.N+63)/64)
	for _, v := range cfg.Train {
		k := position[v]
		s.train[k/64] |= 1 << (k % 64)
	}
	s.order = NewClusterOrder(parts, perBatch, cfg.Seed).o
	return s, nil
}

// permuteTask copies the rows of positions [lo, hi) into the cluster-ordered
// adjacency, their neighbours renamed to positions.
type permuteTask struct {
	s        *Cluster
	position []int32
}

func (t *permuteTask) Run(lo, hi int) {
	s := t.s
	for k := lo; k < hi; k++ {
		row := s.adj[s.offsets[k]:s.offsets[k+1]]
		for j, u := range s.cfg.Graph.Adj(int(s.nodes[k])) {
			row[j] = t.position[u]
		}
	}
}

func (s *Cluster) Batches() int { return s.order.batches() }

// Sample builds the batch's block in two passes over its nodes, each in
// parallel. The first lists every node's neighbours within the batch as
// batch indices, from l.start[i] in l.pick for node i (where its full row
// would begin), their count in l.op.Offsets[i+1]; after a prefix sum the
// second writes the operator's rows, the self loop first where agg reads
// one. Until the end l.src lists the batch's nodes by position, and
// b.local maps a position to its batch index plus one.
func (s *Cluster) Sample(epoch, index int, b *Batch) error {
	clusters, err := s.order.seeds(epoch, index)
	if err != nil {
		return err
	}
	agg := s.cfg.Aggregation
	b.prepare(1, s.cfg.Graph.N)
	l := &b.layers[0]
	l.src = l.src[:0]
	for _, c := range clusters {
		for p := s.start[c]; p < s.start[c+1]; p++ {
			l.src = append(l.src, int32(p))
		}
	}
	n := len(l.src)
	l.start = growTo(l.start, n+1)
	l.start[0] = 0
	for i, p := range l.src {
		l.start[i+1] = l.start[i] + s.offsets[p+1] - s.offsets[p]
		b.local[p] = int32(i) + 1
	}
	l.pick = growTo(l.pick, int(l.start[n]))
	l.op.Offsets = growTo(l.op.Offsets, n+1)
	t := &clusterRowsTask{s: s, l: l, local: b.local, agg: agg}
	parallel.For(n, 256, t)
	for _, p := range l.src {
		b.local[p] = 0
	}
	self := int64(1) // the self loop GCN and attention rows hold
	if agg == Mean {
		self = 0
	}
	op := &l.op
	op.Offsets[0] = 0
	for i := range n {
		op.Offsets[i+1] += op.Offsets[i] + self
	}
	l.shape(n, int(op.Offsets[n]), agg) // keeps the offsets
	t.fill = true
	parallel.For(n, 256, t)
	b.Loss = b.Loss[:0]
	for i, p := range l.src {
		if s.train[p/64]&(1<<(p%64)) != 0 {
			b.Loss = append(b.Loss, int32(i))
		}
		l.src[i] = s.nodes[p]
	}
	if err := l.reset(agg); err != nil {
		return err
	}
	b.finish(l.src)
	b.Weight = nil
	return nil
}

// clusterRowsTask makes the rows of the batch's nodes [lo, hi): their
// neighbours within the batch, or, with fill, the operator's rows (see
// Sample).
type clusterRowsTask struct {
	s     *Cluster
	l     *layer
	local []int32
	agg   Aggregation
	fill  bool
}

func (t *clusterRowsTask) Run(lo, hi int) {
	s, l, op := t.s, t.l, &t.l.op
	if !t.fill {
		loop := t.agg == Mean // the mean keeps a self loop the graph has; the others get theirs in the second pass
		for i := lo; i < hi; i++ {
			p := l.src[i]
			out, k := l.pick[l.start[i]:], 0
			for _, u := range s.adj[s.offsets[p]:s.offsets[p+1]] {
				if j := t.local[u]; j != 0 && (u != p || loop) {
					out[k] = j - 1
					k++
				}
			}
			op.Offsets[i+1] = int64(k)
		}
		return
	}
	for i := lo; i < hi; i++ {
		at, end := op.Offsets[i], op.Offsets[i+1]
		picked := l.pick[l.start[i]:]
		switch t.agg {
		case Mean:
			copy(op.Indices[at:end], picked)
			w := float32(1 / float64(end-at))
			for q := at; q < end; q++ {
				op.Values[q] = w
			}
		case Attention:
			op.Indices[at] = int32(i)
			copy(op.Indices[at+1:end], picked)
		case GCN:
			// 1/√(d̂_i·d̂_j), d̂ a row's length: the neighbours within the
			// batch and the self loop, computed as graph.GCNNorm does.
			isd := 1 / math.Sqrt(float64(end-at))
			op.Indices[at], op.Values[at] = int32(i), float32(isd*isd)
			for q := at + 1; q < end; q++ {
				j := picked[q-at-1]
				op.Indices[q] = j
				op.Values[q] = float32(isd * (1 / math.Sqrt(float64(op.Offsets[j+1]-op.Offsets[j]))))
			}
		}
	}
}

// NewPartCluster returns the Cluster-GCN sampler of one worker of a
// data-parallel run, which holds pg and owns owned (ascending global ids),
// with the training nodes train among them: its clusters are cut from the
// subgraph its own nodes induce, so the edges between parts are in no
// batch, as the edges between clusters of different batches are in none.
// A part of fewer nodes than spec's clusters is cut into one cluster a
// node, and a batch takes at most all of them. The batches' nodes are
// global ids. With no owned node there is no sampler (nil).
func NewPartCluster(pg PartGraph, owned, train []int32, spec PartSpec, agg Aggregation, seed uint64) (*Cluster, error) {
	if len(owned) == 0 {
		return nil, nil
	}
	g := pg.Graph
	local := &graph.Graph{N: len(owned), Offsets: make([]int64, len(owned)+1)}
	for i, v := range owned {
		for _, u := range g.Adj(int(v)) {
			if j, ok := slices.BinarySearch(owned, u); ok {
				local.Neighbors = append(local.Neighbors, int32(j))
			}
		}
		local.Offsets[i+1] = int64(len(local.Neighbors))
	}
	localTrain := make([]int32, 0, len(train))
	for _, v := range train {
		j, ok := slices.BinarySearch(owned, v)
		if !ok {
			return nil, fmt.Errorf("sample: training node %d is not the part's", v)
		}
		localTrain = append(localTrain, int32(j))
	}
	clusters := min(spec.Clusters, len(owned))
	cfg := Config{Graph: local, Train: localTrain, BatchSize: 1, Layers: 1, Aggregation: agg, Seed: seed}
	s, err := NewCluster(cfg, clusters, min(spec.PerBatch, clusters), spec.Method)
	if err != nil {
		return nil, err
	}
	for k, v := range s.nodes {
		s.nodes[k] = owned[v]
	}
	return s, nil
}

// TrainCounts is each cluster's training nodes.
func (s *Cluster) TrainCounts() []int {
	out := make([]int, len(s.start)-1)
	for c := range out {
		for p := s.start[c]; p < s.start[c+1]; p++ {
			if s.train[p/64]&(1<<(p%64)) != 0 {
				out[c]++
			}
		}
	}
	return out
}

// ClusterOrder deals clusters into an epoch's batches as a Cluster sampler
// of as many clusters, per batch and seed deals its own.
type ClusterOrder struct{ o *seedOrder }

// NewClusterOrder returns the order of Cluster's batches of perBatch of
// clusters clusters, for seed.
func NewClusterOrder(clusters, perBatch int, seed uint64) ClusterOrder {
	ids := make([]int32, clusters)
	for c := range ids {
		ids[c] = int32(c)
	}
	o := newSeedOrder(ids, perBatch, seed)
	o.purpose = purposeClusters
	return ClusterOrder{o}
}

// Batches is the number of batches of an epoch.
func (c ClusterOrder) Batches() int { return c.o.batches() }

// Batch returns the clusters of batch index of epoch, none past the last.
func (c ClusterOrder) Batch(epoch, index int) []int32 {
	if index < 0 || index >= c.o.batches() {
		return nil
	}
	b, _ := c.o.seeds(epoch, index)
	return b
}
