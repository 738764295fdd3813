package train

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/nn"
)

// scriptedStepper reports a fixed validation accuracy per evaluation, and
// leaves the gradients zero: the loop's selection and stopping alone are
// under test.
type scriptedStepper struct {
	model  *nn.Model
	valAcc []float64 // by evaluation, the last repeating
	evals  int
}

func (s *scriptedStepper) Model() *nn.Model                { return s.model }
func (s *scriptedStepper) Batches() int                    { return 1 }
func (s *scriptedStepper) Step(Batch) (float64, error)     { return 1, nil }
func (s *scriptedStepper) State() (json.RawMessage, error) { return nil, nil }
func (s *scriptedStepper) Restore(json.RawMessage) error   { return nil }

func (s *scriptedStepper) Evaluate(int) (Evaluation, error) {
	acc := s.valAcc[min(s.evals, len(s.valAcc)-1)]
	s.evals++
	return Evaluation{ValCorrect: 100 * acc, ValCount: 100, TestCorrect: 100 * acc, TestCount: 100, ValLossSum: 100}, nil
}

// TestPatienceWaitsForTheScheduleFloor: a run whose validation accuracy
// peaks while the compression schedule is above its floor neither stops
// on patience nor keeps that epoch; patience counts from the floor.
func TestPatienceWaitsForTheScheduleFloor(t *testing.T) {
	// Best at epoch 2, worse ever after.
	script := []float64{0.5, 0.9, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.6}
	tests := []struct {
		name                       string
		floor                      int // first epoch at the floor; 0: no AtFloor hook
		epochs                     int
		wantEpochs, wantBest, want int // want: FloorEpoch
		wantStopped                bool
	}{
		{"no schedule", 0, 50, 5, 2, 1, true},
		{"floor at epoch 1", 1, 50, 5, 2, 1, true},
		{"floor at epoch 10", 10, 50, 14, 11, 10, true},
		{"run ends before the floor", 10, 8, 8, 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Model: nn.Config{Model: "mlp", Hidden: 4, Classes: 2, Layers: 2, Seed: 1},
				Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, Epochs: tt.epochs, Patience: 3}
			model, err := NewModel(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			s := &scriptedStepper{model: model, valAcc: script}
			l, err := New(cfg, s)
			if err != nil {
				t.Fatal(err)
			}
			// A checkpoint every epoch: progress above the floor must encode.
			hooks := Hooks{CheckpointEvery: 1, SaveCheckpoint: func(*checkpoint.State) error { return nil }}
			if tt.floor > 0 {
				hooks.AtFloor = func() bool { return s.evals >= tt.floor } // evaluations so far = epochs trained
			}
			res, err := l.Run(context.Background(), hooks)
			if err != nil {
				t.Fatal(err)
			}
			if res.Epochs != tt.wantEpochs || res.Best.Epoch != tt.wantBest || res.FloorEpoch != tt.want || res.StoppedEarly != tt.wantStopped {
				t.Errorf("ran %d epochs, kept epoch %d, floor epoch %d, stopped early %v; want %d, %d, %d, %v",
					res.Epochs, res.Best.Epoch, res.FloorEpoch, res.StoppedEarly, tt.wantEpochs, tt.wantBest, tt.want, tt.wantStopped)
			}
			if tt.floor > 0 && res.FloorEpoch > 0 && res.Best.Epoch < res.FloorEpoch {
				t.Errorf("kept epoch %d, before the floor at epoch %d", res.Best.Epoch, res.FloorEpoch)
			}
		})
	}
}
