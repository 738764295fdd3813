package traintest

import (
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// Classes is the number of classes of SBMProblem's graph.
const Classes = 4

// SBMProblem is a learnable stochastic-block-model graph of n nodes with
// ten noisy class-correlated features and a fixed split: two fifths of the
// nodes train, one fifth validates, the rest test.
func SBMProblem(t testing.TB, n int) train.Problem { return SBM(t, n, 10, 4) }

// SBM is SBMProblem's graph with the given number of features, drawn from
// seed.
func SBM(t testing.TB, n, features int, seed uint64) train.Problem {
	t.Helper()
	g, x, labels, err := graph.SBM(graph.SBMConfig{Nodes: n, Classes: Classes, AvgDegree: 6, Homophily: 0.8, Features: features, FeatureNoise: 1}, seed)
	if err != nil {
		t.Fatal(err)
	}
	p := train.Problem{Graph: g, Features: nn.DenseFeatures(x), Labels: labels}
	for v := range int32(n) {
		switch v % 5 {
		case 0, 1:
			p.Train = append(p.Train, v)
		case 2:
			p.Val = append(p.Val, v)
		default:
			p.Test = append(p.Test, v)
		}
	}
	return p
}

// Config is a small model of the given kind for SBMProblem's graph (hidden
// width 8, dropout, GAT's two heads with attention dropout) trained by Adam
// with weight decay for the given number of epochs.
func Config(model string, layers, epochs int) train.Config {
	mc := nn.Config{Model: model, Hidden: 8, Classes: Classes, Layers: layers, Heads: 2, Dropout: 0.3, Seed: 42}
	if model == "gat" {
		mc.AttentionDropout = 0.2
	}
	return train.Config{Model: mc, Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, WeightDecay: 5e-4, Epochs: epochs}
}
