package decentral

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/graph"
)

// randomGraph returns an Erdős–Rényi graph, which may be disconnected.
func randomGraph(t testing.TB, n int, p float64, seed uint64) *graph.Graph {
	t.Helper()
	g, err := graph.ErdosRenyi(n, p, seed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// randomBatch draws b regression samples with random features and targets.
func randomBatch(t testing.TB, m Model, s *Shift, b int, rng *rand.Rand) []Sample {
	t.Helper()
	n, in, out := s.Graph.N, m.Dims[0], m.Dims[m.Layers()]
	batch := make([]Sample, b)
	for k := range batch {
		x := make([]float64, n*in)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		losses := make([]LocalLoss, n)
		for i := range losses {
			y := make([]float64, out)
			for j := range y {
				y[j] = rng.NormFloat64()
			}
			losses[i] = SquaredError{Target: y}
		}
		batch[k] = Sample{Shift: s, X: x, Loss: losses}
	}
	return batch
}

// maxRelDiff is max |a−b| / max(1, max|b|).
func maxRelDiff(a, b []float64) float64 {
	scale, d := 1.0, 0.0
	for i := range b {
		scale = max(scale, math.Abs(b[i]))
		d = max(d, math.Abs(a[i]-b[i]))
	}
	if len(a) != len(b) {
		return math.Inf(1)
	}
	return d / scale
}

func mustNetwork(t testing.TB, cfg Config) *Network {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}
