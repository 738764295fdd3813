package sample

import (
	"math"
	"testing"
)

// Valid blocks of bounded sizes, determinism, and unbiased rows.
func TestFastGCN(t *testing.T) {
	checkLayerwise(t, "fastgcn", func(cfg Config, size int) Sampler { return NewFastGCN(cfg, []int{size}) })
}

// The probabilities are the operators' squared column norms without the
// diagonal, summing to one.
func TestFastGCNProbabilities(t *testing.T) {
	g, _ := directedTestGraph(t)
	for _, agg := range []Aggregation{GCN, Mean} {
		op := fullOperator(g, agg)
		norm := make([]float64, g.N)
		for v := range op.Rows {
			for p := op.Offsets[v]; p < op.Offsets[v+1]; p++ {
				if u := op.Indices[p]; int(u) != v || agg == Mean {
					norm[u] += float64(op.Value(p)) * float64(op.Value(p))
				}
			}
		}
		total := 0.0
		for _, w := range norm {
			total += w
		}
		s := NewFastGCN(testConfig(g, agg, 1, 10), []int{5})
		for u, w := range norm {
			if got := s.q[u]; math.Abs(got-w/total) > 1e-6*w/total {
				t.Fatalf("%v: node %d drawn with probability %g, want %g", agg, u, got, w/total)
			}
		}
	}
}

func TestFastGCNSpecErrors(t *testing.T) {
	g, _, _ := testGraph(t, 100, 5)
	checkSpecErrors(t, testConfig(g, GCN, 2, 10), "fastgcn:5", "fastgcn:5,0", "fastgcn:a,b", "fastgcn:5,-1", "fastgcn:", "fastgcn:1,2,3", "fastgcn:5,5:rownorm", "fastgcn:5,2.5")
}

func BenchmarkFastGCN(b *testing.B) {
	benchmarkLayerwise(b, "fastgcn:512,512")
}
