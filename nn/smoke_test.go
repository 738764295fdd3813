package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

// randomGraph returns a symmetric random graph on n nodes with about deg
// neighbours per node.
func randomGraph(t testing.TB, n, deg int, seed uint64) *graph.Graph {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var src, dst []int32
	for i := 0; i < n*deg/2; i++ {
		src = append(src, int32(rng.IntN(n)))
		dst = append(dst, int32(rng.IntN(n)))
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func randomMatrix(rows, cols int, rng *rand.Rand) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	return m
}

func TestModelsTrain(t *testing.T) {
	for _, model := range []string{"gcn", "sage", "mlp"} {
		t.Run(model, func(t *testing.T) {
			const n, f, c = 60, 12, 3
			g := WholeGraph(randomGraph(t, n, 4, 1))
			rng := rand.New(rand.NewPCG(2, 2))
			x := randomMatrix(n, f, rng)
			labels := make([]int32, n)
			rows := make([]int32, n)
			for i := range labels {
				labels[i] = int32(rng.IntN(c))
				rows[i] = int32(i)
			}
			m, err := NewModel(Config{Model: model, InFeatures: f, Hidden: 16, Classes: c, Dropout: 0.1, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			opt, err := NewOptimizer(m.Params(), OptimizerConfig{Algorithm: Adam, LR: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			var ce CrossEntropy
			var first, last float64
			for epoch := 0; epoch < 100; epoch++ {
				logits := m.Forward([]*Block{g}, DenseFeatures(x), true)
				loss, dl, err := ce.Forward(logits, labels, rows, float64(len(rows)))
				if err != nil {
					t.Fatal(err)
				}
				m.Backward(dl)
				opt.Step()
				if epoch == 0 {
					first = loss
				}
				last = loss
			}
			if !(last < first*0.7) {
				t.Errorf("loss went from %v to %v", first, last)
			}
		})
	}
}
