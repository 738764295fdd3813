package nn

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkEpoch times a full-graph training epoch (forward, loss, backward,
// Adam step) on a random graph of 100k nodes and 1.6M edges with 128 dense
// features and 128 hidden units.
func BenchmarkEpoch(b *testing.B) {
	const n, in, hidden, classes = 100_000, 128, 128, 16
	gg := randomGraph(b, n, 16, 1)
	rng := rand.New(rand.NewPCG(2, 2))
	x := randomMatrix(n, in, rng)
	labels := make([]int32, n)
	rows := make([]int32, n)
	for i := range labels {
		labels[i], rows[i] = int32(rng.IntN(classes)), int32(i)
	}
	for _, model := range []string{"gcn", "sage", "gat"} {
		b.Run(model, func(b *testing.B) {
			m, _ := NewModel(Config{Model: model, InFeatures: in, Hidden: hidden, Classes: classes, Heads: 4, Dropout: 0.5, AttentionDropout: 0.5})
			opt, _ := NewOptimizer(m.Params(), OptimizerConfig{Algorithm: Adam, LR: 0.01})
			g := WholeGraph(gg)
			var ce CrossEntropy
			for b.Loop() {
				logits := m.Forward([]*Block{g}, DenseFeatures(x), true)
				_, dl, _ := ce.Forward(logits, labels, rows, n)
				m.Backward(dl)
				opt.Step()
			}
		})
	}
}

// BenchmarkDropout times the forward and backward pass of feature dropout
// on a 100k×128 matrix.
func BenchmarkDropout(b *testing.B) {
	const n, cols = 100_000, 128
	x := randomMatrix(n, cols, rand.New(rand.NewPCG(1, 1)))
	g := &Block{NumDst: n, NumSrc: n}
	d := Dropout{P: 0.5}
	b.SetBytes(n * cols * 4)
	for i := 0; b.Loop(); i++ {
		d.Forward(g, DenseFeatures(x), Mode{Train: true, Step: uint64(i)})
		d.Backward(x)
	}
}
