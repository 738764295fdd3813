package decentral

import (
	"testing"

	"github.com/graft-gnn/graft/internal/stats"
)

func TestGradientMatchesCentral(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		p         float64
		model     Model
		piggyback bool
		coupled   bool // a loss that reads the neighbours' outputs
	}{
		{"two-layer K=1", 30, 0.15, Model{Dims: []int{4, 5, 2}, Hops: 1, Hidden: Sigmoid, Output: Sigmoid}, false, false},
		{"two-layer K=1 piggyback", 30, 0.15, Model{Dims: []int{4, 5, 2}, Hops: 1, Hidden: Sigmoid, Output: Sigmoid}, true, false},
		{"three-layer K=2 bias", 25, 0.2, Model{Dims: []int{3, 6, 4, 1}, Hops: 2, Bias: true, Hidden: Tanh}, true, false},
		{"one-layer K=3", 20, 0.1, Model{Dims: []int{3, 2}, Hops: 3, Output: LeakyReLU}, false, false},
		{"sparse, disconnected", 40, 0.03, Model{Dims: []int{2, 3, 1}, Hops: 1, Bias: true, Hidden: LeakyReLU}, true, false},
		{"coupled sum-rate loss", 25, 0.2, Model{Dims: []int{2, 4, 1}, Hops: 1, Bias: true, Hidden: Tanh, Output: Sigmoid}, false, true},
		{"coupled sum-rate loss piggyback", 25, 0.2, Model{Dims: []int{2, 4, 1}, Hops: 2, Bias: true, Hidden: Tanh, Output: Sigmoid}, true, true},
	}
	for seed, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := randomGraph(t, tt.n, tt.p, uint64(seed))
			s, err := NormalizedLaplacian(g)
			if err != nil {
				t.Fatal(err)
			}
			rng := newRand(uint64(seed), 99)
			params := tt.model.Init(rng)
			batch := randomBatch(t, tt.model, s, 3, rng)
			if tt.coupled {
				couple(batch, rng)
			}
			net := mustNetwork(t, Config{Model: tt.model, Graph: g, Params: params, Piggyback: tt.piggyback})
			grads, st, err := net.Gradients(batch)
			if err != nil {
				t.Fatal(err)
			}
			wantLoss, want, err := tt.model.Gradient(params, batch)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(stats.ElementwiseMean(grads), want); d > 1e-12 {
				t.Errorf("mean of agents' gradients differs from the central gradient by %.3g", d)
			}
			if d := st.Loss - wantLoss; d > 1e-12 || d < -1e-12 {
				t.Errorf("loss %v, central %v", st.Loss, wantLoss)
			}
		})
	}
}

// couple replaces the samples' losses by random sum-rate terms, whose
// gradient flows through the neighbours' outputs.
func couple(batch []Sample, rng interface{ Float64() float64 }) {
	for _, smp := range batch {
		g := smp.Shift.Graph
		for i := range smp.Loss {
			cross := make([]float64, g.Degree(i))
			for k := range cross {
				cross[k] = rng.Float64()
			}
			smp.Loss[i] = SumRateLoss{Direct: 1 + rng.Float64(), Cross: cross, Noise: 0.1, Pmax: 2}
		}
	}
}
