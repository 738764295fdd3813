package minibatch

import (
	"context"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/traintest"
)

// Evaluation on sampled batches that keep every neighbour is exact
// evaluation: the same accuracies, and the same validation loss to float
// rounding, whatever the batch size.
func TestSampledEvaluationWithWholeNeighbourhoodsIsExact(t *testing.T) {
	p := traintest.SBMProblem(t, 600)
	for _, model := range []string{"gcn", "sage", "gat"} {
		cfg := testConfig(model)
		cfg.Epochs = 3
		exact := evaluations(t, cfg, p, RunOptions{Sampler: "neighbor:5,5", BatchSize: 50})
		sampled := evaluations(t, cfg, p, RunOptions{Sampler: "neighbor:5,5", BatchSize: 50, Options: Options{EvalSampler: "neighbor:-1,-1", EvalBatchSize: 77}})
		for i := range exact {
			a, b := exact[i], sampled[i]
			if a.TrainAcc != b.TrainAcc || a.ValAcc != b.ValAcc || a.TestAcc != b.TestAcc || !near(a.ValLoss, b.ValLoss, 1e-5) {
				t.Errorf("%s epoch %d: exact %+v, sampled %+v", model, i+1, a, b)
			}
		}
	}
}

// A sampler that does not draw each labelled node once cannot evaluate.
func TestSampledEvaluationNeedsEveryNodeOnce(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs = 1
	_, _, err := Run(context.Background(), cfg, p, RunOptions{Sampler: "neighbor:5,5", BatchSize: 50, Options: Options{EvalSampler: "saint-rw:20:2"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "seed-driven") {
		t.Errorf("GraphSAINT as the evaluation sampler: %v", err)
	}
}

func evaluations(t *testing.T, cfg train.Config, p train.Problem, opts RunOptions) []metrics.Epoch {
	t.Helper()
	var out []metrics.Epoch
	_, _, err := Run(context.Background(), cfg, p, opts, func(m metrics.Epoch) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
