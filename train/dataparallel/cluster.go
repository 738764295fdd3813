package dataparallel

import (
	"encoding/binary"
	"fmt"

	"github.com/graft-gnn/graft/sample"
)

// clusterSampler is Cluster-GCN over the parts: each worker cuts its own
// part into the form's clusters and deals them into batches, so its
// batches never leave its part and need no exchange but the gradients'.
// An epoch has ⌈PARTS/PER_BATCH⌉ batches on every worker; one whose part
// has fewer clusters (fewer nodes than PARTS) runs empty batches when they
// are spent. The loss is the mean over the step's training nodes on every
// worker: the workers' cluster sizes are exchanged once, and each deals
// the others' clusters as they do to count them.
type clusterSampler struct {
	sh      *share
	c       *sample.Cluster // nil for a part without nodes
	agg     sample.Aggregation
	nb      int
	orders  []sample.ClusterOrder // per worker
	counts  [][]int               // per worker, per cluster: its training nodes
	labels  []int32
	noRows  sample.Rows
	noNodes []int32
}

func newClusterSampler(cfg samplerConfig) (*clusterSampler, error) {
	sh := cfg.sh
	c, err := sample.NewPartCluster(sh.pg, sh.owned, sh.train, cfg.spec, cfg.agg, cfg.seed)
	if err != nil {
		return nil, err
	}
	s := &clusterSampler{sh: sh, c: c, agg: cfg.agg, nb: (cfg.spec.Clusters + cfg.spec.PerBatch - 1) / cfg.spec.PerBatch,
		orders: make([]sample.ClusterOrder, sh.size), counts: make([][]int, sh.size), noRows: sample.Rows{Start: []int64{0}}}
	// Every worker's clusters and batch size, and each cluster's
	// training nodes.
	var mine []byte
	if c != nil {
		counts := c.TrainCounts()
		mine = binary.LittleEndian.AppendUint32(mine, uint32(min(cfg.spec.PerBatch, len(counts))))
		for _, n := range counts {
			mine = binary.LittleEndian.AppendUint32(mine, uint32(n))
		}
	}
	send, recv := make([][]byte, sh.size), make([][]byte, sh.size)
	for q := range send {
		send[q] = mine
	}
	if err := sh.c.AllToAll(SetupSite, send, recv); err != nil {
		return nil, fmt.Errorf("dataparallel: exchanging the clusters' sizes: %w", err)
	}
	for q, b := range recv {
		if len(b) == 0 {
			continue
		}
		if len(b)%4 != 0 || len(b) < 8 {
			return nil, fmt.Errorf("dataparallel: rank %d sent %d bytes of cluster sizes", q, len(b))
		}
		perBatch, n := int(binary.LittleEndian.Uint32(b)), len(b)/4-1
		if perBatch < 1 || perBatch > n {
			return nil, fmt.Errorf("dataparallel: rank %d deals %d of its %d clusters per batch", q, perBatch, n)
		}
		s.orders[q] = sample.NewClusterOrder(n, perBatch, cfg.seed)
		for i := range n {
			s.counts[q] = append(s.counts[q], int(binary.LittleEndian.Uint32(b[4*(i+1):])))
		}
	}
	return s, nil
}

func (s *clusterSampler) batches() int { return s.nb }
func (s *clusterSampler) local() bool  { return true }

func (s *clusterSampler) sample(epoch, index int, b *sample.Batch) ([]int32, error) {
	if s.c == nil || index >= s.c.Batches() {
		// Nothing left of this worker's clusters: an empty batch.
		// Sized as the sampler's batches are, over the part's nodes.
		if err := b.SetBlock(1, len(s.sh.owned), s.agg, 0, s.noNodes, &s.noRows); err != nil {
			return nil, err
		}
		b.FinishSeeds(s.noNodes)
		return nil, nil
	}
	if err := s.c.Sample(epoch, index, b); err != nil {
		return nil, err
	}
	s.labels = s.labels[:0]
	for _, v := range b.Output {
		s.labels = append(s.labels, s.sh.labels[s.sh.row(v)])
	}
	return s.labels, nil
}

func (s *clusterSampler) norm(epoch, index, micros int) float64 {
	n := 0
	for q, counts := range s.counts {
		if counts == nil {
			continue
		}
		for m := range micros {
			for _, c := range s.orders[q].Batch(epoch, index+m) {
				n += counts[c]
			}
		}
	}
	return float64(max(n, 1))
}
