package train

import (
	"encoding/json"

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
