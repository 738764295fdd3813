package fullgraph

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// Reducer sums values across the workers of one run, in place: afterwards
// every worker holds the element-wise sum of all workers' inputs. Every
// worker must make the same calls in the same order with the same lengths.
type Reducer interface {
	SumFloat32(x []float32) error
	SumFloat64(x []float64) error
}

// Data is what one worker trains on. Rows are the targets of Graph: Features
// has one row per target, Labels one entry per target (negative for a node
// without a label), and Train, Val and Test list target rows.
type Data struct {
	Graph            *nn.Block
	Features         nn.Features
	Labels           []int32
	Train, Val, Test []int32
}

// Config is one training run. The model and optimiser configurations are the
// same on every worker; the seed in Model fixes initialisation and dropout.
type Config struct {
	Model     nn.Config
	Optimizer nn.OptimizerConfig

	// WeightDecay is applied to every parameter, or only to the first
	// layer's when DecayFirstLayerOnly is set (Kipf and Welling's GCN).
	WeightDecay         float64
	DecayFirstLayerOnly bool

	// Epochs is the maximum number of epochs. Patience > 0 stops training
	// once that many epochs pass in which neither the validation accuracy
	// nor the validation loss reached a new best (the criterion of
	// Veličković et al.; with a small learning rate the loss keeps falling
	// long after the accuracy first plateaus).
	Epochs   int
	Patience int
	// SelectByLoss keeps the epoch of lowest validation loss instead of
	// highest validation accuracy, and counts patience on the loss alone:
	// the model selection of Shchur et al.'s benchmark.
	SelectByLoss bool

	// Reducer combines workers; nil means a single worker.
	Reducer Reducer
	// Exchange is this worker's halo exchange when the graph is split
	// (nil otherwise). The trainer tells it which pass comes next, so that
	// training passes are compressed at the step's ratio, and checks it for
	// errors after every pass.
	Exchange *halo.Exchange
}

// ErrNotFinite reports a training loss that became NaN or infinite.
var ErrNotFinite = errors.New("training loss is not finite")

// Metrics are the results of one epoch, summed over all workers.
type Metrics struct {
	Epoch    int     `json:"epoch"` // 1-based
	Loss     float64 `json:"loss"`  // training loss of the step (with dropout)
	TrainAcc float64 `json:"train_acc"`
	ValAcc   float64 `json:"val_acc"`
	TestAcc  float64 `json:"test_acc"`
	ValLoss  float64 `json:"val_loss"`
	// EpochSeconds is the wall time of the whole epoch; StepSeconds of its
	// training part (forward, backward, gradient reduction, step).
	EpochSeconds float64 `json:"epoch_seconds"`
	StepSeconds  float64 `json:"step_seconds"`
}

// Result summarises a run. Best is the epoch with the highest validation
// accuracy (ties go to the lower validation loss, then the earlier epoch);
// its test accuracy is the run's reported accuracy.
type Result struct {
	Epochs       int  // epochs run
	StoppedEarly bool // patience ran out before Epochs
	Best         Metrics
	// EpochSeconds and StepSeconds hold every epoch's wall time and
	// training-step time, in order.
	EpochSeconds, StepSeconds []float64
}

// Trainer runs full-graph training for one worker.
type Trainer struct {
	cfg   Config
	data  Data
	model *nn.Model
	opt   *nn.Optimizer

	params []*nn.Param
	best   []*tensor.Matrix // parameter values at the best epoch

	trainLoss, evalLoss nn.CrossEntropy
	trainCount          float64 // training rows over all workers: the loss normaliser
	valNodes            float64 // validation rows over all workers, from the last evaluation

	flat     []float32  // gradients and loss, packed for one reduction per step
	counts   [8]float64 // metric sums and the stop flag, reduced once per evaluation
	progress progress
}

// New builds the model and optimiser of cfg for data and checks that data is
// consistent. With a Reducer it also agrees with the other workers on the
// number of training rows, so every worker must call New.
func New(cfg Config, data Data) (*Trainer, error) {
	if data.Graph == nil {
		return nil, errors.New("fullgraph: no graph")
	}
	if data.Features.Dense == nil && data.Features.Sparse == nil {
		return nil, errors.New("fullgraph: no features")
	}
	n := data.Graph.NumDst
	if data.Features.Rows() != n || len(data.Labels) != n {
		return nil, fmt.Errorf("fullgraph: %d feature rows and %d labels for %d nodes", data.Features.Rows(), len(data.Labels), n)
	}
	if cfg.Epochs < 1 {
		return nil, fmt.Errorf("fullgraph: %d epochs; want at least 1", cfg.Epochs)
	}
	if cfg.Patience < 0 {
		return nil, fmt.Errorf("fullgraph: patience %d; want 0 (off) or more", cfg.Patience)
	}
	for _, set := range []struct {
		name string
		rows []int32
	}{{"training", data.Train}, {"validation", data.Val}, {"test", data.Test}} {
		for _, r := range set.rows {
			if r < 0 || int(r) >= n {
				return nil, fmt.Errorf("fullgraph: %s row %d outside [0, %d)", set.name, r, n)
			}
			if y := data.Labels[r]; y < 0 || int(y) >= cfg.Model.Classes {
				return nil, fmt.Errorf("fullgraph: %s row %d has label %d outside [0, %d)", set.name, r, y, cfg.Model.Classes)
			}
		}
	}
	cfg.Model.InFeatures = data.Features.Cols()
	model, err := nn.NewModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	decayed := model.Params()
	if cfg.DecayFirstLayerOnly {
		decayed = model.LayerParams(0)
	}
	nn.SetWeightDecay(decayed, cfg.WeightDecay)
	params := model.Params()
	opt, err := nn.NewOptimizer(params, cfg.Optimizer)
	if err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, data: data, model: model, opt: opt, params: params}
	size := 1 // the loss rides along with the gradients
	for _, p := range params {
		t.best = append(t.best, p.Value.Clone())
		size += len(p.Grad.Data)
	}
	if cfg.Reducer != nil {
		t.flat = make([]float32, size)
	}
	count := []float64{float64(len(data.Train))}
	if err := t.sum64(count); err != nil {
		return nil, err
	}
	if count[0] == 0 {
		return nil, errors.New("fullgraph: no training nodes")
	}
	t.trainCount = count[0]
	return t, nil
}

// Model returns the model being trained. After Run it holds the parameters
// of the best epoch.
func (t *Trainer) Model() *nn.Model { return t.model }

// Optimizer returns the optimiser, e.g. to checkpoint its state.
func (t *Trainer) Optimizer() *nn.Optimizer { return t.opt }

// Step runs one training step (forward with dropout, loss, backward,
// gradient reduction, optimiser update) and returns the training loss over
// all workers. A loss that is not finite leaves the parameters untouched
// and returns an error wrapping ErrNotFinite.
func (t *Trainer) Step() (float64, error) {
	d := &t.data
	ex := t.cfg.Exchange
	if ex != nil {
		ex.Begin(t.opt.Steps(), true)
	}
	logits := t.model.Forward([]*nn.Block{d.Graph}, d.Features, true)
	loss, dlogits, err := t.trainLoss.Forward(logits, d.Labels, d.Train, t.trainCount)
	if err != nil {
		return 0, err
	}
	t.model.Backward(dlogits)
	if ex != nil && ex.Err() != nil {
		return 0, ex.Err()
	}
	if t.cfg.Reducer != nil {
		if loss, err = t.reduceGradients(loss); err != nil {
			return 0, err
		}
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, ErrNotFinite
	}
	t.opt.Step()
	return loss, nil
}

// reduceGradients sums every parameter gradient and the loss over the
// workers in one reduction.
func (t *Trainer) reduceGradients(loss float64) (float64, error) {
	off := 0
	for _, p := range t.params {
		off += copy(t.flat[off:], p.Grad.Data)
	}
	t.flat[off] = float32(loss)
	if err := t.cfg.Reducer.SumFloat32(t.flat); err != nil {
		return 0, fmt.Errorf("fullgraph: reducing gradients: %w", err)
	}
	off = 0
	for _, p := range t.params {
		off += copy(p.Grad.Data, t.flat[off:])
	}
	return float64(t.flat[off]), nil
}

// Evaluate runs the model without dropout and returns the accuracies of the
// three sets and the validation loss, over all workers. Epoch, Loss and the
// timings are left zero.
func (t *Trainer) Evaluate() (Metrics, error) {
	m, _, err := t.evaluate(false)
	return m, err
}

// evaluate is Evaluate that also agrees with the other workers on whether
// to stop: stop is true afterwards if any worker asked for it, so that all
// of them stop after the same epoch.
func (t *Trainer) evaluate(askStop bool) (Metrics, bool, error) {
	d := &t.data
	if ex := t.cfg.Exchange; ex != nil {
		ex.Begin(t.opt.Steps(), false)
	}
	logits := t.model.Forward([]*nn.Block{d.Graph}, d.Features, false)
	if ex := t.cfg.Exchange; ex != nil && ex.Err() != nil {
		return Metrics{}, false, ex.Err()
	}
	c := &t.counts
	c[0], c[1] = float64(nn.Correct(logits, d.Labels, d.Train)), float64(len(d.Train))
	c[2], c[3] = float64(nn.Correct(logits, d.Labels, d.Val)), float64(len(d.Val))
	c[4], c[5] = float64(nn.Correct(logits, d.Labels, d.Test)), float64(len(d.Test))
	c[6], c[7] = 0, 0
	if len(d.Val) > 0 {
		// Normalised by 1 so that the workers' sums add up; divided below.
		loss, _, err := t.evalLoss.Forward(logits, d.Labels, d.Val, 1)
		if err != nil {
			return Metrics{}, false, err
		}
		c[6] = loss
	}
	if askStop {
		c[7] = 1
	}
	if err := t.sum64(c[:8]); err != nil {
		return Metrics{}, false, err
	}
	t.valNodes = c[3]
	return Metrics{
		TrainAcc: ratio(c[0], c[1]),
		ValAcc:   ratio(c[2], c[3]),
		TestAcc:  ratio(c[4], c[5]),
		ValLoss:  ratio(c[6], c[3]),
	}, c[7] > 0, nil
}

// ErrInterrupted is returned by Run when a worker's context was cancelled:
// every worker stops after the same completed epoch, with the model holding
// that epoch's parameters (not the best ones), ready to be checkpointed.
var ErrInterrupted = errors.New("training interrupted")

// progress is where a run stands between epochs; checkpoints carry it so
// that a resumed run selects and stops exactly as an uninterrupted one.
type progress struct {
	Epoch     int     `json:"epoch"` // completed epochs
	Best      Metrics `json:"best"`
	SinceBest int     `json:"since_best"` // epochs without a better validation accuracy or loss
	BestAcc   float64 `json:"best_acc"`   // best validation accuracy and loss so far, for patience
	BestLoss  float64 `json:"best_loss"`
}

// Run trains until cfg.Epochs epochs have completed (counting those of a
// restored checkpoint), calling onEpoch (if not nil) after each; an error
// from onEpoch stops training and is returned. On return the model holds
// the parameters of the best epoch, except after ErrInterrupted.
func (t *Trainer) Run(ctx context.Context, onEpoch func(Metrics) error) (Result, error) {
	var res Result
	res.EpochSeconds = make([]float64, 0, t.cfg.Epochs)
	res.StepSeconds = make([]float64, 0, t.cfg.Epochs)
	pr := &t.progress
	if pr.Epoch == 0 {
		pr.BestAcc, pr.BestLoss = math.Inf(-1), math.Inf(1)
	}
	res.Best, res.Epochs = pr.Best, pr.Epoch
	interrupted := false
	defer func() {
		if pr.Epoch > 0 && !interrupted {
			t.RestoreBest()
		}
	}()
	for epoch := pr.Epoch + 1; epoch <= t.cfg.Epochs; epoch++ {
		start := time.Now()
		loss, err := t.Step()
		if err != nil {
			if errors.Is(err, ErrNotFinite) {
				return res, fmt.Errorf("%w: %v at epoch %d", err, loss, epoch)
			}
			return res, err
		}
		stepSeconds := time.Since(start).Seconds()
		m, stop, err := t.evaluate(ctx.Err() != nil)
		if err != nil {
			return res, err
		}
		m.Epoch, m.Loss, m.StepSeconds = epoch, loss, stepSeconds
		if ex := t.cfg.Exchange; ex != nil {
			// An adaptive schedule watches the validation loss: the model,
			// evaluated uncompressed, stops improving when compression
			// limits it, while the training loss keeps falling at any
			// ratio. Without a validation set it watches the training loss.
			if t.valNodes > 0 {
				ex.Observe(m.ValLoss)
			} else {
				ex.Observe(loss)
			}
		}
		m.EpochSeconds = time.Since(start).Seconds()
		res.Epochs = epoch
		res.EpochSeconds = append(res.EpochSeconds, m.EpochSeconds)
		res.StepSeconds = append(res.StepSeconds, m.StepSeconds)
		pr.Epoch = epoch
		if t.better(m, pr.Best) {
			pr.Best = m
			t.saveBest()
		}
		res.Best = pr.Best
		pr.SinceBest++
		if m.ValLoss < pr.BestLoss || (!t.cfg.SelectByLoss && m.ValAcc > pr.BestAcc) {
			pr.SinceBest = 0
		}
		pr.BestAcc, pr.BestLoss = max(pr.BestAcc, m.ValAcc), min(pr.BestLoss, m.ValLoss)
		// Once the workers have agreed to stop, the parameters stay as they
		// are (for the checkpoint) whatever happens next.
		interrupted = stop
		if onEpoch != nil {
			if err := onEpoch(m); err != nil {
				return res, err
			}
		}
		if stop {
			return res, fmt.Errorf("%w after epoch %d", ErrInterrupted, epoch)
		}
		if t.cfg.Patience > 0 && pr.SinceBest >= t.cfg.Patience {
			res.StoppedEarly = epoch < t.cfg.Epochs
			break
		}
	}
	return res, nil
}

// better reports whether m improves on best (from an epoch before, or none
// yet): a higher validation accuracy, or an equal one with a lower
// validation loss; with SelectByLoss, a lower validation loss. Comparing
// only values that every worker shares keeps the workers' choices identical.
func (t *Trainer) better(m, best Metrics) bool {
	switch {
	case best.Epoch == 0:
		return true
	case t.cfg.SelectByLoss:
		return m.ValLoss < best.ValLoss
	case m.ValAcc != best.ValAcc:
		return m.ValAcc > best.ValAcc
	}
	return m.ValLoss < best.ValLoss
}

func (t *Trainer) saveBest() {
	for i, p := range t.params {
		copy(t.best[i].Data, p.Value.Data)
	}
}

// RestoreBest sets the model's parameters to those of the best epoch so far.
func (t *Trainer) RestoreBest() {
	for i, p := range t.params {
		copy(p.Value.Data, t.best[i].Data)
	}
}

func (t *Trainer) sum64(x []float64) error {
	if t.cfg.Reducer == nil {
		return nil
	}
	if err := t.cfg.Reducer.SumFloat64(x); err != nil {
		return fmt.Errorf("fullgraph: reducing metrics: %w", err)
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
