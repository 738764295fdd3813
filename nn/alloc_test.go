package nn

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestEpochAllocations measures what a training epoch (forward, loss,
// backward, optimiser step) allocates once the buffers exist. The remaining
// allocations are the closures handed to the parallel loops: a few dozen
// small objects, independent of the graph's size.
func TestEpochAllocations(t *testing.T) {
	const n, in, classes = 2000, 64, 7
	gg := randomGraph(t, n, 8, 3)
	rng := rand.New(rand.NewPCG(4, 4))
	x := randomMatrix(n, in, rng)
	for i := range x.Data {
		if rng.Float64() < 0.95 {
			x.Data[i] = 0
		}
	}
	labels := make([]int32, n)
	rows := make([]int32, 0, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(classes))
		if i%10 == 0 {
			rows = append(rows, int32(i))
		}
	}
	for _, model := range []string{"gcn", "sage", "gat"} {
		t.Run(model, func(t *testing.T) {
			g := WholeGraph(gg)
			feats := NewFeatures(x, Auto)
			m, err := NewModel(Config{Model: model, InFeatures: in, Hidden: 16, Classes: classes, Heads: 4,
				Dropout: 0.5, AttentionDropout: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			opt, _ := NewOptimizer(m.Params(), OptimizerConfig{Algorithm: Adam, LR: 0.01})
			var ce CrossEntropy
			epoch := func() {
				logits := m.Forward([]*Block{g}, feats, true)
				_, dl, err := ce.Forward(logits, labels, rows, float64(len(rows)))
				if err != nil {
					t.Fatal(err)
				}
				m.Backward(dl)
				opt.Step()
				m.Forward([]*Block{g}, feats, false) // evaluation pass
			}
			epoch()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const epochs = 20
			for range epochs {
				epoch()
			}
			runtime.ReadMemStats(&after)
			allocs := (after.Mallocs - before.Mallocs) / epochs
			bytes := (after.TotalAlloc - before.TotalAlloc) / epochs
			t.Logf("%s: %d allocations, %d bytes per epoch after the first", model, allocs, bytes)
			if allocs > 100 || bytes > 64<<10 {
				t.Errorf("an epoch allocates %d objects, %d bytes; want close to nothing", allocs, bytes)
			}
		})
	}
}
