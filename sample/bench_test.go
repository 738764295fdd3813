package sample

import (
	"testing"

	"github.com/graft-gnn/graft/graph"
)

// BenchmarkNeighbor samples batches of 1024 seeds with fanouts 15,10,5 from
// a graph of average degree 52 (the ogbn-products shape at a tenth of its
// nodes) and reports sampled block entries per second.
func BenchmarkNeighbor(b *testing.B) {
	g, _, _, err := graph.SBM(graph.SBMConfig{Nodes: 240000, Classes: 47, AvgDegree: 52, Homophily: 0.8}, 1)
	if err != nil {
		b.Fatal(err)
	}
	var train []int32
	for v := int32(0); int(v) < g.N; v += 10 {
		train = append(train, v)
	}
	s := NewNeighbor(Config{Graph: g, Train: train, BatchSize: 1024, Layers: 3, Aggregation: Mean, Seed: 1}, []int{15, 10, 5})
	var batch Batch
	if err := s.Sample(1, 0, &batch); err != nil {
		b.Fatal(err)
	}
	var edges int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Sample(2, i%s.Batches(), &batch); err != nil {
			b.Fatal(err)
		}
		for _, blk := range batch.Blocks {
			edges += int64(blk.Operators().Mean.NNZ())
		}
	}
	b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
}
