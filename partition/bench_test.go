package partition

import (
	"fmt"
	"testing"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/datatest"
)

// benchGraphs loads the comparison graphs: the staged datasets when
// GRAFT_DATA is set, and an R-MAT graph always.
func benchGraphs(b *testing.B) []testGraph {
	var gs []testGraph
	for _, name := range []string{"amazon-computers", "coauthor-cs", "cnr-2000"} {
		d, err := dataset.Load(name, datatest.Dir(b))
		if err != nil {
			b.Fatal(err)
		}
		g := d.Graph
		if !g.IsSymmetric() {
			g = g.Symmetrize()
		}
		gs = append(gs, testGraph{name, g})
	}
	g, err := graph.RMAT(16, 1<<20, graph.RMATA, graph.RMATB, graph.RMATC, 1)
	if err != nil {
		b.Fatal(err)
	}
	return append(gs, testGraph{"rmat-16", g})
}

// BenchmarkPartition reports the edge cut and imbalance of every method on
// every comparison graph and K; scripts/partition-compare.sh puts the same
// numbers beside gpmetis's.
func BenchmarkPartition(b *testing.B) {
	gs := benchGraphs(b)
	for _, tg := range gs {
		for _, k := range []int{2, 4, 8, 16} {
			for _, m := range Methods() {
				b.Run(fmt.Sprintf("%s/k=%d/%s", tg.name, k, m), func(b *testing.B) {
					p, _ := New(m)
					var parts []int32
					for b.Loop() {
						var err error
						if parts, err = p.Partition(tg.g, k, Options{Seed: 1}); err != nil {
							b.Fatal(err)
						}
					}
					r, err := Evaluate(tg.g, parts, k, nil)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(r.EdgeCut), "cut")
					b.ReportMetric(r.Imbalance, "imbalance")
				})
			}
		}
	}
}
