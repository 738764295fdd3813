package train

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/nn"
)

// Stepper is one worker's share of a training run, as the loop drives it.
type Stepper interface {
	// Model is the model being trained; the loop updates its parameters.
	Model() *nn.Model
	// Batches is the number of micro-batches in an epoch (1 for
	// full-graph training).
	Batches() int
	// Step runs the forward and backward pass of micro-batch b, writing
	// the parameters' gradients (overwriting them), and returns this
	// worker's loss. Loss and gradients are normalised so that their sums
	// over the optimiser step's micro-batches and over the workers are the
	// step's mean loss and its gradient.
	Step(b Batch) (loss float64, err error)
	// Evaluate runs the model without dropout and returns this worker's
	// sums of the metrics; step is the number of optimiser steps taken.
	Evaluate(step int) (Evaluation, error)
	// State and Restore carry what the stepper must keep across a
	// checkpoint beyond the model's parameters and dropout clock (an
	// adaptive compression schedule's state, say); nil when nothing.
	State() (json.RawMessage, error)
	Restore(state json.RawMessage) error
}

// Partial is a Stepper that trains some of its model's parameters only (a
// pipeline stage, which holds some of the model's layers): the loop steps,
// keeps and checkpoints those alone.
type Partial interface {
	Trained() []*nn.Param
}

// TensorStater is a Stepper with bulk state (a delta codec's
// reconstructions, say), which a checkpoint keeps as tensors beside the
// parameters rather than in the JSON of State. The loop calls
// StateTensors right after State, and RestoreTensors right after Restore
// with the checkpoint's tensors by name (nil when absent).
type TensorStater interface {
	StateTensors() ([]checkpoint.Tensor, error)
	RestoreTensors(tensor func(name string) *checkpoint.Tensor) error
}

// Stateless gives a stepper that keeps nothing beyond what the loop's
// checkpoint holds its State and Restore: a sampled batch depends only on
// (seed, epoch, index), and the checkpoint holds the epoch.
type Stateless struct{}

func (Stateless) State() (json.RawMessage, error) { return nil, nil }

func (Stateless) Restore(state json.RawMessage) error {
	if state != nil {
		return errors.New("train: the checkpoint holds another trainer's state")
	}
	return nil
}

// Batch names one micro-batch of the run.
type Batch struct {
	Epoch int // 1-based
	Index int // the micro-batch's place in its epoch, 0-based
	// Step is the number of optimiser steps taken before this one: the
	// clock of learning-rate and compression schedules.
	Step int
	// Micro is this micro-batch's place among the Micros that the
	// optimiser step accumulates.
	Micro, Micros int
}

// Evaluation is one worker's sums over its rows: correct predictions and
// counts of the training, validation and test rows, and the validation
// loss summed over the validation rows (not averaged).
type Evaluation struct {
	TrainCorrect, TrainCount float64
	ValCorrect, ValCount     float64
	TestCorrect, TestCount   float64
	ValLossSum               float64
	// Assessment, if its Classes are set, gives macro-F1 and ROC-AUC
	// (see Assess).
	Assessment Assessment
}

// evaluationFields is the number of float64s of an Evaluation.
const evaluationFields = 7

func (e Evaluation) put(x []float64) {
	copy(x, []float64{e.TrainCorrect, e.TrainCount, e.ValCorrect, e.ValCount, e.TestCorrect, e.TestCount, e.ValLossSum})
}

// metrics turns the sums (over all workers) into accuracies and the mean
// validation loss.
func (e Evaluation) metrics() Metrics {
	return Metrics{
		TrainAcc: ratio(e.TrainCorrect, e.TrainCount),
		ValAcc:   ratio(e.ValCorrect, e.ValCount),
		TestAcc:  ratio(e.TestCorrect, e.TestCount),
		ValLoss:  ratio(e.ValLossSum, e.ValCount),
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Reducer sums values across the workers of one run, in place: afterwards
// every worker holds the element-wise sum of all workers' inputs. Every
// worker must make the same calls in the same order with the same lengths.
type Reducer interface {
	SumFloat32(x []float32) error
	SumFloat64(x []float64) error
}

// ShapedReducer is a Reducer that compresses gradients: it must know the
// layout of the loop's packed gradient buffer, one shape per parameter in
// order (the values past them, the loss, it sums exactly). The loop tells
// it before the first SumFloat32.
type ShapedReducer interface {
	SetParamShapes(shapes []gradcomp.Shape) error
}

// EpochReducer is a Reducer whose gradient sums depend on the epoch (a
// compression's exact warm-up): the loop tells it the epoch of every
// optimiser step before the step's SumFloat32, and it reports whether
// that step's gradients arrive late (error feedback), so that the
// optimiser takes catch-up steps (nn.OptimizerConfig.CatchUp) only then.
type EpochReducer interface {
	SetEpoch(epoch int) (delayed bool)
}

// StatefulReducer is a Reducer with per-worker state that a resumed run
// needs (a compressor's residuals). GatherState is a collective call:
// every worker makes it at each checkpoint, and rank 0 gets everyone's
// state as checkpoint tensors (the others nil); RestoreState takes this
// worker's share from a checkpoint.
type StatefulReducer interface {
	GatherState() ([]checkpoint.Tensor, error)
	RestoreState(*checkpoint.State) error
}

// Gatherer is a Reducer that can also concatenate the workers' values, in
// rank order, lengths differing: ROC-AUC over several workers ranks every
// worker's scores together.
type Gatherer interface {
	Concat(mine []float64) ([]float64, error)
}

// gatherScores concatenates every worker's scores.
func gatherScores(g Gatherer, mine []Scored) ([]Scored, error) {
	flat := make([]float64, 2*len(mine))
	for i, s := range mine {
		flat[2*i] = float64(s.Score)
		if s.Positive {
			flat[2*i+1] = 1
		}
	}
	all, err := g.Concat(flat)
	if err != nil {
		return nil, err
	}
	if len(all)%2 != 0 {
		return nil, fmt.Errorf("%d values gathered for score pairs", len(all))
	}
	out := make([]Scored, len(all)/2)
	for i := range out {
		out[i] = Scored{float32(all[2*i]), all[2*i+1] == 1}
	}
	return out, nil
}
