package train

import (
	"errors"
	"fmt"

	"github.com/graft-gnn/graft/nn"
)

// Config is one training run, the same on every worker: the model, its
// optimiser, and how long to train and which epoch to keep. The seed in
// Model fixes initialisation and dropout.
type Config struct {
	Model     nn.Config
	Optimizer nn.OptimizerConfig

	// WeightDecay is applied to every parameter, or only to the first
	// layer's when DecayFirstLayerOnly is set (Kipf and Welling's GCN).
	WeightDecay         float64
	DecayFirstLayerOnly bool

	// Epochs is the maximum number of epochs, and Steps, when positive,
	// the maximum number of optimiser steps. Patience > 0 stops training
	// once that many epochs pass in which neither the validation accuracy
	// nor the validation loss reached a new best (the criterion of
	// Veličković et al.; with a small learning rate the loss keeps falling
	// long after the accuracy first plateaus).
	Epochs, Steps int
	Patience      int
	// SelectByLoss keeps the epoch of lowest validation loss instead of
	// highest validation accuracy, and counts patience on the loss alone:
	// the model selection of Shchur et al.'s benchmark.
	SelectByLoss bool
	// Metric is the validation measure model selection and patience
	// follow without SelectByLoss ("" is Accuracy).
	Metric Metric

	// EvalEvery > 1 evaluates every EvalEvery epochs (and after the last)
	// instead of after every epoch; model selection and an adaptive
	// schedule see only the evaluated epochs.
	EvalEvery int

	// Accumulate is the number of micro-batches whose gradients one
	// optimiser step sums (0 means 1): k micro-batches of b seeds step as
	// one batch of k·b.
	Accumulate int

	// Reducer combines workers; nil means a single worker.
	Reducer Reducer
}

// check reports the first setting that is out of range.
func (c *Config) check() error {
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("train: %d epochs; want at least 1", c.Epochs)
	case c.Steps < 0:
		return fmt.Errorf("train: %d steps; want 0 (no limit) or more", c.Steps)
	case c.Patience < 0:
		return fmt.Errorf("train: patience %d; want 0 (off) or more", c.Patience)
	case c.EvalEvery < 0:
		return fmt.Errorf("train: evaluation every %d epochs; want 1 or more", c.EvalEvery)
	case c.Metric != "" && c.Metric != Accuracy && c.Metric != ROCAUC && c.Metric != MacroF1:
		return fmt.Errorf("train: metric %q; want acc, auc or f1", c.Metric)
	case c.Accumulate < 0:
		return fmt.Errorf("train: accumulation over %d micro-batches; want 1 or more", c.Accumulate)
	}
	return nil
}

// NewModel builds cfg's model for inputs of the given width, with its
// weight decay set.
func NewModel(cfg Config, inFeatures int) (*nn.Model, error) {
	mc := cfg.Model
	mc.InFeatures = inFeatures
	model, err := nn.NewModel(mc)
	if err != nil {
		return nil, err
	}
	decayed := model.Params()
	if cfg.DecayFirstLayerOnly {
		decayed = model.LayerParams(0)
	}
	nn.SetWeightDecay(decayed, cfg.WeightDecay)
	return model, nil
}

// ErrNotFinite reports a training loss that became NaN or infinite.
var ErrNotFinite = errors.New("training loss is not finite")

// ErrInterrupted is returned by Run when a worker's context was cancelled:
// every worker stops after the same completed epoch, having saved that
// epoch's checkpoint (if it saves them), with the model holding the best
// parameters.
var ErrInterrupted = errors.New("training interrupted")
