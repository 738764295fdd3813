package fullgraph

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// TestResultsDoNotDependOnGOMAXPROCS: a seed fixes a run's bits on any
// machine. Every parallel reduction must cut its work by the problem, not
// by the number of cores, or two machines (or two workers of one job
// started with different GOMAXPROCS) would round differently.
func TestResultsDoNotDependOnGOMAXPROCS(t *testing.T) {
	const n, classes = 12000, 5
	g, x, labels, err := graph.SBM(graph.SBMConfig{Nodes: n, Classes: classes, AvgDegree: 10, Homophily: 0.7,
		Features: 48, FeatureNoise: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var trainRows, val []int32
	for v := range int32(n) {
		switch v % 10 {
		case 0, 1, 2:
			trainRows = append(trainRows, v)
		case 3:
			val = append(val, v)
		}
	}
	for _, tc := range []struct {
		model   string
		storage nn.Storage
	}{{"gcn", nn.ForceDense}, {"sage", nn.ForceDense}, {"gat", nn.ForceDense}, {"gcn", nn.ForceSparse}, {"sage", nn.ForceSparse}} {
		model := tc.model
		name := model + map[nn.Storage]string{nn.ForceDense: "/dense", nn.ForceSparse: "/sparse"}[tc.storage]
		t.Run(name, func(t *testing.T) {
			run := func(procs int) []float32 {
				prev := runtime.GOMAXPROCS(procs)
				defer runtime.GOMAXPROCS(prev)
				cfg := presetConfig(t, model, classes, 5)
				cfg.Epochs, cfg.Patience = 3, 0
				cfg.Model.Hidden, cfg.Model.Heads = 32, 2
				tr, err := New(cfg, Data{Block: nn.WholeGraph(g), Features: nn.NewFeatures(x, tc.storage), Labels: labels, Train: trainRows, Val: val, Test: val}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tr.Run(context.Background(), train.Hooks{}); err != nil {
					t.Fatal(err)
				}
				var out []float32
				for _, p := range tr.Model().Params() {
					out = append(out, p.Value.Data...)
				}
				return out
			}
			want := run(1)
			for _, procs := range []int{2, 3, 7} {
				got := run(procs)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("GOMAXPROCS %d: parameter value %d is %v, with GOMAXPROCS 1 %v", procs, i, got[i], want[i])
					}
				}
			}
		})
	}
}
