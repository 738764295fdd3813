package job

import (
	"testing"

	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/nn"
)

// Top-k with error feedback takes SGD's momentum over (DGC's momentum
// correction); the optimiser then steps without it. Other methods, other
// optimisers and one worker leave the optimiser alone.
func TestGradCompressionTakesMomentum(t *testing.T) {
	sgd := nn.OptimizerConfig{Algorithm: nn.SGD, LR: 0.1, Momentum: 0.9}
	nesterov := sgd
	nesterov.Nesterov = true
	adam := nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}
	for _, tc := range []struct {
		spec         string
		parts        int
		opt          nn.OptimizerConfig
		method, left float64 // momentum of the method, and left to the optimiser
	}{
		{"topk:0.01", 4, sgd, 0.9, 0},
		{"topk:0.01,noef", 4, sgd, 0, 0.9},
		{"powersgd:2", 4, sgd, 0, 0.9},
		{"topk:0.01", 4, nesterov, 0, 0.9},
		{"topk:0.01", 4, adam, 0, 0},
		{"topk:0.01", 1, sgd, -1, 0.9},
		{"none", 4, sgd, -1, 0.9},
	} {
		s := Spec{GradCompress: tc.spec, Parts: tc.parts}
		s.Train.Optimizer = tc.opt
		newMethod, err := s.gradCompression()
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if tc.method < 0 {
			if newMethod != nil {
				t.Errorf("%s on %d workers: a compressor", tc.spec, tc.parts)
			}
		} else {
			m, err := newMethod()
			if err != nil {
				t.Fatal(err)
			}
			if got := gradcomp.MomentumOf(m); got != tc.method {
				t.Errorf("%s with %+v: the method accumulates momentum %v, want %v", tc.spec, tc.opt, got, tc.method)
			}
		}
		if s.Train.Optimizer.Momentum != tc.left {
			t.Errorf("%s with %+v on %d workers: the optimiser keeps momentum %v, want %v", tc.spec, tc.opt, tc.parts, s.Train.Optimizer.Momentum, tc.left)
		}
	}
}
