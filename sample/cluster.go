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
	start []int    // cluster c's nodes are nodes[start[c]:start[c+1]]
	nodes []int32  // every node, cluster by cluster, ascending within each
	train []uint64 // bit v is set when v is a training node
	order *seedOrder
}

func newCluster(args string, cfg Config) (Sampler, error) {
	fields := strings.Split(args, ":")
	if len(fields) < 2 || len(fields) > 3 {
		return nil, fmt.Errorf("want PARTS:PER_BATCH[:METHOD]")
	}
	var counts [2]int
	for i, f := range fields[:2] {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		counts[i] = v
	}
	method := "multilevel"
	if len(fields) == 3 {
		method = fields[2]
	}
	return NewCluster(cfg, counts[0], counts[1], method)
}

// NewCluster returns a Cluster-GCN sampler of batches of perBatch clusters
// of parts, the graph's partition into parts by method (a name
// partition.New accepts). It partitions the graph, so it takes the
// partitioner's time; the multilevel and METIS partitioners need the
// graph undirected.
func NewCluster(cfg Config, parts, perBatch int, method string) (*Cluster, error) {
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
	train := make([]uint64, (g.N+63)/64)
	balance := make([]int32, g.N)
	for _, v := range cfg.Train {
		train[v/64] |= 1 << (v % 64)
		balance[v] = 1
	}
	assign, err := p.Partition(g, parts, partition.Options{Seed: cfg.Seed, Balance: balance})
	if err != nil {
		return nil, err
	}
	if err := partition.CheckAssignment(assign, g.N, parts); err != nil {
		return nil, err
	}
	s := &Cluster{cfg: cfg, start: make([]int, parts+1), nodes: make([]int32, g.N), train: train}
	for _, c := range assign { // a counting sort of the nodes by cluster
		s.start[c+1]++
	}
	for c := range parts {
		s.start[c+1] += s.start[c]
	}
	next := slices.Clone(s.start[:parts]) // each cluster's next free slot
	for v, c := range assign {
		s.nodes[next[c]] = int32(v)
		next[c]++
	}
	ids := make([]int32, parts)
	for c := range ids {
		ids[c] = int32(c)
	}
	s.order = newSeedOrder(ids, perBatch, cfg.Seed)
	s.order.purpose = purposeClusters
	return s, nil
}

func (s *Cluster) Batches() int { return s.order.batches() }

func (s *Cluster) Sample(epoch, index int, b *Batch) error {
	if index < 0 || index >= s.Batches() {
		return fmt.Errorf("sample: batch %d of an epoch of %d", index, s.Batches())
	}
	g, agg := s.cfg.Graph, s.cfg.Aggregation
	b.prepare(1, g.N)
	l := &b.layers[0]
	// The batch's nodes, held in b.Output until the block has them.
	nodes := b.Output[:0]
	for _, c := range s.order.seeds(epoch, index) {
		nodes = append(nodes, s.nodes[s.start[c]:s.start[c+1]]...)
	}
	b.Output = nodes
	n := len(nodes)
	for i, v := range nodes {
		b.local[v] = int32(i) + 1
	}
	l.start = growTo(l.start, n+1)
	l.start[0] = 0
	t := &inducedTask{g: g, agg: agg, l: l, nodes: nodes, local: b.local}
	parallel.For(n, 256, t) // l.start[i+1]: node i's neighbours within the batch
	for i := range n {
		l.start[i+1] += l.start[i]
	}
	l.pick = growTo(l.pick, int(l.start[n]))
	if agg != Attention {
		l.vals = growTo(l.vals, int(l.start[n]))
	}
	t.fill = true
	parallel.For(n, 256, t)
	for _, v := range nodes {
		b.local[v] = 0
	}
	err := l.build(nodes, agg, func(i int) float32 {
		isd := 1 / math.Sqrt(float64(l.start[i+1]-l.start[i]+1))
		return float32(isd * isd)
	}, b.local)
	if err != nil {
		return err
	}
	b.finish(l.src)
	b.Loss = b.Loss[:0]
	for i, v := range b.Output {
		if s.train[v/64]&(1<<(v%64)) != 0 {
			b.Loss = append(b.Loss, int32(i))
		}
	}
	b.Weight = nil
	return nil
}

// inducedTask lists the neighbours within the batch of the batch's nodes
// [lo, hi): their count in l.start[i+1] for node i, or, with fill, the
// neighbours themselves in l.pick from l.start[i] and their operator values
// in l.vals. A neighbour is in the batch when local marks it; GCN and
// attention rows leave out the node itself, whose self loop build adds.
type inducedTask struct {
	g     *graph.Graph
	agg   Aggregation
	l     *layer
	nodes []int32
	local []int32
	fill  bool
}

func (t *inducedTask) Run(lo, hi int) {
	l, local, loop := t.l, t.local, t.agg == Mean // loop: keep a self loop of the graph
	for i := lo; i < hi; i++ {
		v := t.nodes[i]
		adj := t.g.Adj(int(v))
		if !t.fill {
			k := int64(0)
			for _, u := range adj {
				if local[u] != 0 && (u != v || loop) {
					k++
				}
			}
			l.start[i+1] = k
			continue
		}
		at, end := l.start[i], l.start[i+1]
		for _, u := range adj {
			if local[u] != 0 && (u != v || loop) {
				l.pick[at] = u
				at++
			}
		}
		at = l.start[i]
		switch t.agg {
		case Mean:
			w := float32(1 / float64(end-at))
			for p := at; p < end; p++ {
				l.vals[p] = w
			}
		case GCN:
			// 1/√(d̂_v·d̂_u), d̂ counting the neighbours within the batch and
			// the self loop, computed as graph.GCNNorm does.
			isd := 1 / math.Sqrt(float64(end-at+1))
			for p := at; p < end; p++ {
				j := local[l.pick[p]] - 1
				l.vals[p] = float32(isd * (1 / math.Sqrt(float64(l.start[j+1]-l.start[j]+1))))
			}
		}
	}
}
