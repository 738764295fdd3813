package train

import (
	"context"
	"math"
	"testing"

	"github.com/graft-gnn/graft/nn"
)

func TestBetter(t *testing.T) {
	tests := []struct {
		byLoss  bool
		m, best Metrics
		want    bool
	}{
		{false, Metrics{ValAcc: 0.8, ValLoss: 1}, Metrics{Epoch: 1, ValAcc: 0.7, ValLoss: 0.5}, true},
		{false, Metrics{ValAcc: 0.7, ValLoss: 1}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 2}, false},
		{false, Metrics{ValAcc: 0.8, ValLoss: 0.9}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, true},
		{false, Metrics{ValAcc: 0.8, ValLoss: 1}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, false},
		{false, Metrics{ValAcc: 0}, Metrics{}, true}, // nothing selected yet
		{true, Metrics{ValAcc: 0.7, ValLoss: 0.5}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, true},
		{true, Metrics{ValAcc: 0.9, ValLoss: 1.5}, Metrics{Epoch: 1, ValAcc: 0.8, ValLoss: 1}, false},
		{true, Metrics{ValLoss: 9}, Metrics{}, true},
	}
	for _, tt := range tests {
		l := &Loop{cfg: Config{SelectByLoss: tt.byLoss}}
		if got := l.better(tt.m, tt.best); got != tt.want {
			t.Errorf("better(%+v, %+v) by loss %v = %v, want %v", tt.m, tt.best, tt.byLoss, got, tt.want)
		}
	}
}

// With Config.Metric, model selection and patience follow that validation
// metric: the epoch of best macro-F1 or ROC-AUC is kept even where
// accuracy says otherwise, and patience restarts on a new best of it.
func TestSelectByMetric(t *testing.T) {
	epochs := []Metrics{
		{ValAcc: 0.9, ValF1: 0.5, ValAUC: 0.6, ValLoss: 3},
		{ValAcc: 0.8, ValF1: 0.7, ValAUC: 0.9, ValLoss: 3},
		{ValAcc: 0.7, ValF1: 0.8, ValAUC: 0.7, ValLoss: 3},
		{ValAcc: 0.6, ValF1: 0.6, ValAUC: 0.8, ValLoss: 3},
	}
	tests := []struct {
		metric    Metric
		best      int
		sinceBest int
	}{
		{Accuracy, 1, 3},
		{MacroF1, 3, 1},
		{ROCAUC, 2, 2},
	}
	for _, tc := range tests {
		l := &Loop{cfg: Config{Metric: tc.metric}}
		l.progress.BestAcc, l.progress.BestLoss = math.Inf(-1), math.Inf(1)
		for i, m := range epochs {
			m.Epoch, m.Evaluated = i+1, true
			l.keepBest(m, true)
		}
		if got := l.progress.Best.Epoch; got != tc.best || l.progress.SinceBest != tc.sinceBest {
			t.Errorf("metric %s: best epoch %d, %d since; want %d, %d", tc.metric, got, l.progress.SinceBest, tc.best, tc.sinceBest)
		}
	}
}

// noValStepper has training and test rows but no validation rows.
type noValStepper struct{ scriptedStepper }

func (s *noValStepper) Evaluate(int) (Evaluation, error) {
	s.evals++
	return Evaluation{TrainCorrect: 5, TrainCount: 10, TestCorrect: 3, TestCount: 10}, nil
}

// Without validation rows (a split that puts every labelled node in
// training) there is nothing to select by: the run keeps its last epoch,
// whatever the selection, and patience never stops it. It used to keep
// the first epoch and stop after patience epochs.
func TestNoValidationKeepsLastEpoch(t *testing.T) {
	for _, byLoss := range []bool{false, true} {
		cfg := Config{Model: nn.Config{Model: "mlp", Hidden: 4, Classes: 2, Layers: 2, Seed: 1},
			Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, Epochs: 9, Patience: 2, EvalEvery: 2, SelectByLoss: byLoss}
		model, err := NewModel(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(cfg, &noValStepper{scriptedStepper{model: model}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Run(context.Background(), Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Epochs != 9 || res.Best.Epoch != 9 || res.StoppedEarly {
			t.Errorf("select by loss %v: ran %d epochs, kept epoch %d, stopped early %v; want 9, 9, false", byLoss, res.Epochs, res.Best.Epoch, res.StoppedEarly)
		}
	}
}
