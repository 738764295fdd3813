package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// Metrics are the results of one epoch, over all workers.
type Metrics struct {
	Epoch    int     `json:"epoch"` // 1-based
	Loss     float64 `json:"loss"`  // training loss (with dropout), averaged over the epoch's optimiser steps
	TrainAcc float64 `json:"train_acc"`
	ValAcc   float64 `json:"val_acc"`
	TestAcc  float64 `json:"test_acc"`
	ValLoss  float64 `json:"val_loss"`
	// ValF1 and TestF1 are the macro-F1 of the two sets; ValAUC and
	// TestAUC their ROC-AUC, on a binary task only (0 on others).
	// ValAUCUndefined and TestAUCUndefined are set on a binary task where
	// the set lacks one of the two classes (or its scores were not
	// gathered from the workers): its ROC-AUC is then undefined, and the
	// field 0.
	ValF1            float64 `json:"val_f1"`
	TestF1           float64 `json:"test_f1"`
	ValAUC           float64 `json:"val_auc,omitempty"`
	TestAUC          float64 `json:"test_auc,omitempty"`
	ValAUCUndefined  bool    `json:"val_auc_undefined,omitempty"`
	TestAUCUndefined bool    `json:"test_auc_undefined,omitempty"`
	// EpochSeconds is the wall time of the whole epoch; StepSeconds of its
	// training part (forward, backward, gradient reduction, steps), and
	// EvalSeconds of its evaluation.
	EpochSeconds float64 `json:"epoch_seconds"`
	StepSeconds  float64 `json:"step_seconds"`
	EvalSeconds  float64 `json:"eval_seconds"`
	// Evaluated is false for an epoch that Config.EvalEvery skips: its
	// accuracies and validation loss are the last evaluation's.
	Evaluated bool `json:"evaluated"`
}

// Result summarises a run. Best is the epoch kept by model selection; its
// test accuracy is the run's reported accuracy.
type Result struct {
	Epochs       int  // epochs run
	StoppedEarly bool // patience ran out before Epochs
	Best         Metrics
	// FloorEpoch is the first epoch trained at the compression schedule's
	// floor (Hooks.AtFloor), 0 if none was; 1 without compression.
	FloorEpoch int
	// EpochSeconds and StepSeconds hold every epoch's wall time and
	// training time, in order; EvalSeconds every evaluation's.
	EpochSeconds, StepSeconds, EvalSeconds []float64
}

// Hooks are what the loop's caller does between epochs, in this order.
type Hooks struct {
	// Observe receives the validation loss of every epoch (the training
	// loss when there is no validation set): an adaptive compression
	// schedule watches it. The uncompressed model's validation loss stops
	// improving when compression limits it, while the training loss keeps
	// falling at any ratio.
	Observe func(loss float64)
	// SaveCheckpoint, if set, is given the run's state every
	// CheckpointEvery epochs (when positive) and after an interrupted
	// epoch. One worker of a run saves; the others leave it nil, except
	// with a StatefulReducer, whose state every worker's checkpoint call
	// gathers: then the others set a function that discards the state.
	SaveCheckpoint  func(*checkpoint.State) error
	CheckpointEvery int
	// OnEpoch receives every epoch's metrics; an error stops training and
	// is returned.
	OnEpoch func(Metrics) error
	// AtFloor, if set, reports whether the epoch just trained ran at the
	// compression schedule's floor, the ratio it keeps from then on. Until
	// it does, patience does not count, and model selection starts over at
	// the first epoch that does: a run neither stops nor keeps its model
	// while the schedule still compresses harder than it will at the end.
	// (A run that ends before the floor keeps its best epoch so far.)
	AtFloor func() bool
}

// Loop trains a Stepper's model.
type Loop struct {
	cfg     Config
	stepper Stepper
	model   *nn.Model
	opt     *nn.Optimizer
	params  []*nn.Param
	best    []*tensor.Matrix // parameter values at the best epoch

	epochs   EpochReducer // the reducer, when its sums depend on the epoch
	flat     []float32    // gradients summed over micro-batches, and the loss, for one reduction per step
	sums     []float64
	progress progress
	last     Metrics // the last evaluation
}

// New returns the loop that trains s's model with cfg.
func New(cfg Config, s Stepper) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if _, gathers := cfg.Reducer.(Gatherer); cfg.Metric == ROCAUC && cfg.Reducer != nil && !gathers {
		return nil, errors.New("train: ROC-AUC over several workers needs a reducer that gathers scores")
	}
	cfg.Accumulate = max(cfg.Accumulate, 1)
	model := s.Model()
	params := model.Params()
	if p, ok := s.(Partial); ok {
		params = p.Trained()
	}
	opt, err := nn.NewOptimizer(params, cfg.Optimizer)
	if err != nil {
		return nil, err
	}
	l := &Loop{cfg: cfg, stepper: s, model: model, opt: opt, params: params}
	size := 1 // the loss rides along with the gradients
	for _, p := range params {
		l.best = append(l.best, p.Value.Clone())
		size += len(p.Grad.Data)
	}
	if cfg.Reducer != nil || cfg.Accumulate > 1 {
		l.flat = make([]float32, size)
	}
	l.epochs, _ = cfg.Reducer.(EpochReducer)
	if sr, ok := cfg.Reducer.(ShapedReducer); ok {
		shapes := make([]gradcomp.Shape, len(params))
		for i, p := range params {
			shapes[i] = gradcomp.Shape{Rows: p.Grad.Rows, Cols: p.Grad.Cols}
		}
		if err := sr.SetParamShapes(shapes); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Model returns the model being trained. After Run it holds the parameters
// of the best epoch.
func (l *Loop) Model() *nn.Model { return l.model }

// Step runs one optimiser step over the micro-batches of epoch starting at
// batch first (Config.Accumulate of them, fewer at the epoch's end) and
// returns the step's loss over all workers. A loss that is not finite
// leaves the parameters untouched and returns an error wrapping
// ErrNotFinite.
func (l *Loop) Step(epoch, first int) (float64, error) {
	micros := min(l.cfg.Accumulate, l.stepper.Batches()-first)
	var loss float64
	for m := range micros {
		b := Batch{Epoch: epoch, Index: first + m, Step: l.opt.Steps(), Micro: m, Micros: micros}
		part, err := l.stepper.Step(b)
		if err != nil {
			return 0, err
		}
		loss += part
		if l.flat != nil {
			l.accumulate(m == 0)
		}
	}
	if l.flat != nil {
		if l.epochs != nil {
			l.opt.SetWhole(!l.epochs.SetEpoch(epoch))
		}
		var err error
		if loss, err = l.combine(loss); err != nil {
			return 0, err
		}
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, ErrNotFinite
	}
	l.opt.Step()
	return loss, nil
}

// accumulate adds the parameters' gradients into the packed buffer (or
// copies them, for the step's first micro-batch).
func (l *Loop) accumulate(first bool) {
	off := 0
	for _, p := range l.params {
		dst := l.flat[off : off+len(p.Grad.Data)]
		if first {
			copy(dst, p.Grad.Data)
		} else {
			for i, g := range p.Grad.Data {
				dst[i] += g
			}
		}
		off += len(dst)
	}
}

// combine sums the packed gradients and the loss over the workers and
// hands the gradients back to the parameters. With one worker the loss
// stays in float64.
func (l *Loop) combine(loss float64) (float64, error) {
	n := len(l.flat) - 1
	if l.cfg.Reducer != nil {
		l.flat[n] = float32(loss)
		if err := l.cfg.Reducer.SumFloat32(l.flat); err != nil {
			return 0, fmt.Errorf("train: reducing gradients: %w", err)
		}
		loss = float64(l.flat[n])
	}
	off := 0
	for _, p := range l.params {
		off += copy(p.Grad.Data, l.flat[off:])
	}
	return loss, nil
}

// Evaluate runs the model without dropout and returns the accuracies of the
// three sets and the validation loss, over all workers. Epoch, Loss and the
// timings are left zero.
func (l *Loop) Evaluate() (Metrics, error) {
	m, _, err := l.evaluate(false)
	return m, err
}

// evaluate is Evaluate that also agrees with the other workers on whether
// to stop: stop is true afterwards if any worker asked for it, so that all
// of them stop after the same epoch. The stop flag rides on the metrics'
// reduction.
func (l *Loop) evaluate(askStop bool) (m Metrics, stop bool, err error) {
	e, err := l.stepper.Evaluate(l.opt.Steps())
	if err != nil {
		return Metrics{}, false, err
	}
	classes := e.Assessment.Classes
	s := append(l.sums[:0], make([]float64, evaluationFields+1)...)
	e.put(s)
	if askStop {
		s[evaluationFields] = 1
	}
	s = append(s, classes...) // the same length on every worker: the model's outputs
	l.sums = s
	if r := l.cfg.Reducer; r != nil {
		if err := r.SumFloat64(s); err != nil {
			return Metrics{}, false, fmt.Errorf("train: reducing metrics: %w", err)
		}
	}
	a := e.Assessment
	e = Evaluation{TrainCorrect: s[0], TrainCount: s[1], ValCorrect: s[2], ValCount: s[3], TestCorrect: s[4], TestCount: s[5], ValLossSum: s[6]}
	l.progress.valRows, l.progress.noVal = e.ValCount, e.ValCount == 0
	m = e.metrics()
	if c := s[evaluationFields+1:]; len(c) > 0 {
		m.ValF1, m.TestF1 = macroF1(c[:len(c)/2]), macroF1(c[len(c)/2:])
	}
	if len(classes) == 12 { // two classes
		var defined [2]bool
		if m.ValAUC, m.TestAUC, defined, err = l.aucs(a); err != nil {
			return Metrics{}, false, err
		}
		m.ValAUCUndefined, m.TestAUCUndefined = !defined[0], !defined[1]
	}
	return m, s[evaluationFields] > 0, nil
}

// aucs returns the validation and test ROC-AUC over all workers' scores,
// and whether each is defined: not where a set lacks a class or the
// reducer cannot gather (the area is then 0).
func (l *Loop) aucs(a Assessment) (val, test float64, defined [2]bool, err error) {
	var out [2]float64
	for i, scores := range [][]Scored{a.ValScores, a.TestScores} {
		if g, ok := l.cfg.Reducer.(Gatherer); ok {
			if scores, err = gatherScores(g, scores); err != nil {
				return 0, 0, defined, fmt.Errorf("train: gathering scores: %w", err)
			}
		} else if l.cfg.Reducer != nil {
			continue
		}
		out[i], defined[i] = rocAUC(scores)
	}
	return out[0], out[1], defined, nil
}

// agreeStop agrees with the other workers on whether to stop, as evaluate
// does, for an epoch without an evaluation.
func (l *Loop) agreeStop(askStop bool) (bool, error) {
	s := append(l.sums[:0], 0)
	l.sums = s
	if askStop {
		s[0] = 1
	}
	if r := l.cfg.Reducer; r != nil {
		if err := r.SumFloat64(s); err != nil {
			return false, fmt.Errorf("train: agreeing to stop: %w", err)
		}
	}
	return s[0] > 0, nil
}

// progress is where a run stands between epochs; checkpoints carry it so
// that a resumed run selects and stops exactly as an uninterrupted one.
type progress struct {
	Epoch     int     `json:"epoch"` // completed epochs
	Best      Metrics `json:"best"`
	SinceBest int     `json:"since_best"` // epochs without a better validation accuracy or loss
	BestAcc   float64 `json:"best_acc"`   // best validation accuracy (or Config.Metric) and loss so far, for patience
	BestLoss  float64 `json:"best_loss"`
	// AboveFloor is set while the compression schedule has not reached
	// its floor (Hooks.AtFloor); FloorEpoch is the first epoch that did.
	AboveFloor bool `json:"above_floor,omitempty"`
	FloorEpoch int  `json:"floor_epoch,omitempty"`

	valRows float64 // validation rows over all workers, from the last evaluation
	// noVal is set when the last evaluation had no validation rows on any
	// worker: with nothing to select by, the latest epoch is kept and
	// patience never runs out (a split that puts every labelled node in
	// training kept its first epoch, and stopped after patience epochs).
	noVal bool
}

// Run trains until Config.Epochs epochs have completed (counting those of a
// restored checkpoint), Config.Steps optimiser steps have been taken, or
// patience runs out. On return the model holds the parameters of the best
// epoch. When ctx is cancelled, every worker stops after the same epoch,
// saves its checkpoint and returns an error wrapping ErrInterrupted.
func (l *Loop) Run(ctx context.Context, hooks Hooks) (Result, error) {
	var res Result
	pr := l.startProgress()
	Began(ctx, pr.Epoch+1)
	res.Best, res.Epochs = pr.Best, pr.Epoch
	defer func() {
		if pr.Epoch > 0 {
			l.RestoreBest()
		}
	}()
	for epoch := pr.Epoch + 1; epoch <= l.cfg.Epochs && !l.stepsDone(); epoch++ {
		start := time.Now()
		loss, err := l.trainEpoch(epoch)
		if err != nil {
			return res, err
		}
		stepSeconds := time.Since(start).Seconds()
		evaluated := l.cfg.EvalEvery <= 1 || epoch%l.cfg.EvalEvery == 0 || epoch == l.cfg.Epochs || l.stepsDone()
		m, stop, err := l.last, false, error(nil)
		if evaluated {
			m, stop, err = l.evaluate(ctx.Err() != nil)
			m.EvalSeconds = time.Since(start).Seconds() - stepSeconds
			res.EvalSeconds = append(res.EvalSeconds, m.EvalSeconds)
			l.last = m
		} else {
			m.EvalSeconds = 0
			stop, err = l.agreeStop(ctx.Err() != nil)
		}
		if err != nil {
			return res, err
		}
		m.Epoch, m.Loss, m.StepSeconds, m.Evaluated = epoch, loss, stepSeconds, evaluated
		if hooks.Observe != nil && evaluated {
			if pr.valRows > 0 {
				hooks.Observe(m.ValLoss)
			} else {
				hooks.Observe(loss)
			}
		}
		m.EpochSeconds = time.Since(start).Seconds()
		res.Epochs = epoch
		res.EpochSeconds = append(res.EpochSeconds, m.EpochSeconds)
		res.StepSeconds = append(res.StepSeconds, m.StepSeconds)
		l.keepBest(m, hooks.AtFloor == nil || hooks.AtFloor())
		res.Best, res.FloorEpoch = pr.Best, pr.FloorEpoch
		if hooks.SaveCheckpoint != nil && (stop || hooks.CheckpointEvery > 0 && epoch%hooks.CheckpointEvery == 0) {
			if err := l.save(hooks.SaveCheckpoint); err != nil {
				return res, fmt.Errorf("checkpoint after epoch %d: %w", epoch, err)
			}
		}
		if hooks.OnEpoch != nil {
			if err := hooks.OnEpoch(m); err != nil {
				return res, err
			}
		}
		if stop {
			return res, fmt.Errorf("%w after epoch %d", ErrInterrupted, epoch)
		}
		if l.cfg.Patience > 0 && pr.SinceBest >= l.cfg.Patience {
			res.StoppedEarly = epoch < l.cfg.Epochs
			break
		}
	}
	return res, nil
}

func (l *Loop) stepsDone() bool { return l.cfg.Steps > 0 && l.opt.Steps() >= l.cfg.Steps }

// trainEpoch runs epoch's optimiser steps and returns their mean loss.
func (l *Loop) trainEpoch(epoch int) (float64, error) {
	var sum float64
	steps := 0
	for first := 0; first < l.stepper.Batches() && !l.stepsDone(); first += l.cfg.Accumulate {
		loss, err := l.Step(epoch, first)
		if errors.Is(err, ErrNotFinite) {
			return 0, fmt.Errorf("%w: %v at epoch %d", err, loss, epoch)
		}
		if err != nil {
			return 0, err
		}
		sum += loss
		steps++
	}
	if steps == 1 {
		return sum, nil
	}
	return sum / float64(max(steps, 1)), nil
}

// keepBest updates model selection and patience with epoch m, trained at
// the compression schedule's floor or not (Hooks.AtFloor).
func (l *Loop) keepBest(m Metrics, atFloor bool) {
	pr := &l.progress
	pr.Epoch = m.Epoch
	switch {
	case !atFloor: // select among these only until the floor; no patience
		pr.AboveFloor, pr.SinceBest = true, 0
		if m.Evaluated {
			if l.better(m, pr.Best) {
				l.keep(m)
			}
			pr.BestAcc, pr.BestLoss = max(pr.BestAcc, m.ValAcc), min(pr.BestLoss, m.ValLoss)
		}
		return
	case pr.AboveFloor || pr.FloorEpoch == 0 && pr.Epoch == 1:
		if pr.AboveFloor { // the first epoch at the floor: selection starts over
			pr.Best = Metrics{}
			pr.BestAcc, pr.BestLoss = -1, math.MaxFloat64 // beaten by any evaluation, and finite for checkpoints
		}
		pr.AboveFloor, pr.FloorEpoch = false, m.Epoch
	}
	if !m.Evaluated { // nothing to compare: one more epoch without a better one
		pr.SinceBest++
		return
	}
	if l.better(m, pr.Best) {
		l.keep(m)
	}
	pr.SinceBest++
	if m.ValLoss < pr.BestLoss || (!l.cfg.SelectByLoss && l.selected(m) > pr.BestAcc) || pr.noVal {
		pr.SinceBest = 0
	}
	pr.BestAcc, pr.BestLoss = max(pr.BestAcc, l.selected(m)), min(pr.BestLoss, m.ValLoss)
}

// selected is m's validation value of the metric model selection follows.
func (l *Loop) selected(m Metrics) float64 {
	switch l.cfg.Metric {
	case ROCAUC:
		return m.ValAUC
	case MacroF1:
		return m.ValF1
	}
	return m.ValAcc
}

// keep makes m the best epoch, with the model's current parameters.
func (l *Loop) keep(m Metrics) {
	l.progress.Best = m
	for i, p := range l.params {
		copy(l.best[i].Data, p.Value.Data)
	}
}

// better reports whether m improves on best (from an epoch before, or none
// yet): a higher validation accuracy (or Config.Metric), or an equal one
// with a lower validation loss; with SelectByLoss, a lower validation loss;
// without validation rows, always. Comparing
// only values that every worker shares keeps the workers' choices identical.
func (l *Loop) better(m, best Metrics) bool {
	switch {
	case best.Epoch == 0, l.progress.noVal:
		return true
	case l.cfg.SelectByLoss:
		return m.ValLoss < best.ValLoss
	case l.selected(m) != l.selected(best):
		return l.selected(m) > l.selected(best)
	}
	return m.ValLoss < best.ValLoss
}

// startProgress returns the run's progress, with nothing yet to beat
// before its first epoch.
func (l *Loop) startProgress() *progress {
	pr := &l.progress
	if pr.Epoch == 0 {
		pr.BestAcc, pr.BestLoss = math.Inf(-1), math.Inf(1)
	}
	return pr
}

// Observe is model selection and patience for epochs trained outside Run
// (the asynchronous trainer's worker 0 evaluates the parameters the
// servers sent it): epoch m, with the model's current parameters, is kept
// if better, as Run would keep it, and stop reports that patience has run
// out. Epochs come in order; one left out counts as an epoch without an
// evaluation.
func (l *Loop) Observe(m Metrics) (stop bool) {
	pr := l.startProgress()
	for e := pr.Epoch + 1; e < m.Epoch; e++ {
		l.keepBest(Metrics{Epoch: e}, true)
	}
	l.keepBest(m, true)
	return l.cfg.Patience > 0 && pr.SinceBest >= l.cfg.Patience
}

// Best is the selected epoch so far (Epoch 0 before any evaluation).
func (l *Loop) Best() Metrics { return l.progress.Best }

// RestoreBest sets the model's parameters to those of the best epoch so far.
func (l *Loop) RestoreBest() {
	for i, p := range l.params {
		copy(p.Value.Data, l.best[i].Data)
	}
}
