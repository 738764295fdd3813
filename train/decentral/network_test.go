package decentral

import (
	"testing"
)

func TestGradientMatchesCentral(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		p         float64
		model     Model
		piggyback bool
	}{
		{"two-layer K=1", 30, 0.15, Model{Dims: []int{4, 5, 2}, Hops: 1, Hidden: Sigmoid, Output: Sigmoid}, false},
		{"two-layer K=1 piggyback", 30, 0.15, Model{Dims: []int{4, 5, 2}, Hops: 1, Hidden: Sigmoid, Output: Sigmoid}, true},
		{"three-layer K=2 bias", 25, 0.2, Model{Dims: []int{3, 6, 4, 1}, Hops: 2, Bias: true, Hidden: Tanh}, true},
		{"one-layer K=3", 20, 0.1, Model{Dims: []int{3, 2}, Hops: 3, Output: LeakyReLU}, false},
		{"sparse, disconnected", 40, 0.03, Model{Dims: []int{2, 3, 1}, Hops: 1, Bias: true, Hidden: LeakyReLU}, true},
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
			net := mustNetwork(t, Config{Model: tt.model, Graph: g, Params: params, Piggyback: tt.piggyback})
			grads, st, err := net.Gradients(batch)
			if err != nil {
				t.Fatal(err)
			}
			wantLoss, want, err := tt.model.Gradient(params, batch)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(meanOf(grads), want); d > 1e-12 {
				t.Errorf("mean of agents' gradients differs from the central gradient by %.3g", d)
			}
			if d := st.Loss - wantLoss; d > 1e-12 || d < -1e-12 {
				t.Errorf("loss %v, central %v", st.Loss, wantLoss)
			}
		})
	}
}
