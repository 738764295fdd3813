package minibatch

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// Options tune a mini-batch trainer; zero values take the defaults.
type Options struct {
	// Prefetch is how many batches are sampled and gathered ahead of the
	// compute (default 2).
	Prefetch int
	// OnBatch, if set, is called after each batch's backward pass with
	// the epoch, the batches of it done and its batches: progress for
	// epochs that take minutes.
	OnBatch func(epoch, done, batches int)
	// EvalSampler, if set, is a seed-driven sampler's form: evaluation
	// estimates the metrics on its batches of EvalBatchSize labelled
	// nodes instead of computing every node's layers exactly, and holds
	// one batch instead of two layers' outputs for every node.
	EvalSampler   string
	EvalBatchSize int
	// Precision is what exact evaluation stores every node's hidden
	// layers in (default fp32) and what the training passes multiply at
	// (nn.Model.SetProducts). The features' precision is the problem's:
	// FeaturesBF16 if set.
	Precision train.Precision
	// NoFeatures leaves the batches' input features ungathered: a
	// pipeline stage past the first reads its input from the stage
	// before (see Micros). Step cannot run such batches.
	NoFeatures bool
}

// evaluation is how a stepper evaluates: exactly (evaluator) or on
// sampled batches (sampledEvaluator).
type evaluation interface {
	evaluate() (train.Evaluation, error)
}

// Stepper is the mini-batch train.Stepper: each step runs the model on a
// batch from the sampler; evaluation is layer-wise inference over every
// node.
type Stepper struct {
	train.Stateless
	model   *nn.Model
	sampler sample.Sampler
	feed    *feed
	problem train.Problem
	eval    evaluation
	loss    nn.CrossEntropy
	pending []*prepared // the optimiser step's micro-batches
	norm    float64     // the step's loss normaliser, for unweighted batches
	stats   Stats
	onBatch func(epoch, done, batches int)
	noX     bool // Options.NoFeatures
	// releaseFeed lets the feed's batches go before each evaluation: exact
	// evaluation's outputs are over keepBytes.
	releaseFeed bool
}

// Stats are the figures of the batches run since the last call of
// TakeStats: how long sampling, gathering and the model took, how long the
// model waited for a batch, and the batches' sizes.
type Stats struct {
	Batches                                      int
	SampleSeconds, GatherSeconds, ComputeSeconds float64
	WaitSeconds                                  float64
	InputNodes, InputEdges, Seeds                int64
	// GatheredBytes and Flops are the batches' share of the epoch's floor
	// (floor.go).
	GatheredBytes, Flops float64
}

// New returns the mini-batch stepper of problem p with cfg's model, drawing
// batches from sampler. Close stops its background sampling.
func New(cfg train.Config, p train.Problem, sampler sample.Sampler, opts Options) (*Stepper, error) {
	x := inputOf(p)
	if p.Graph == nil || (p.Features.Dense == nil && p.Features.Sparse == nil && p.FeaturesBF16 == nil) {
		return nil, errors.New("minibatch: no graph or no features")
	}
	if p.FeaturesBF16 != nil && (p.Features.Dense != nil || p.Features.Sparse != nil) {
		return nil, errors.New("minibatch: features both in bf16 and in Features")
	}
	if x.rows() != p.Graph.N || len(p.Labels) != p.Graph.N {
		return nil, fmt.Errorf("minibatch: %d feature rows and %d labels for %d nodes", x.rows(), len(p.Labels), p.Graph.N)
	}
	if _, err := train.ParsePrecision(string(opts.Precision)); err != nil {
		return nil, fmt.Errorf("minibatch: %v", err)
	}
	for _, rows := range [][]int32{p.Train, p.Val, p.Test} {
		for _, v := range rows {
			if v < 0 || int(v) >= p.Graph.N || p.Labels[v] < 0 || int(p.Labels[v]) >= cfg.Model.Classes {
				return nil, fmt.Errorf("minibatch: node %d of the split has no label in [0, %d)", v, cfg.Model.Classes)
			}
		}
	}
	model, err := train.NewModel(cfg, x.cols())
	if err != nil {
		return nil, err
	}
	model.SetProducts(opts.Precision.Products())
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return nil, err
	}
	exact := newEvaluator(model, p, sample.NewNeighborhoods(p.Graph, agg), opts.Precision == train.BF16)
	var eval evaluation = exact
	if opts.EvalSampler != "" {
		if eval, err = newSampledEvaluator(model, p, opts.EvalSampler, opts.EvalBatchSize, cfg.Model.Layers, agg, cfg.Model.Seed); err != nil {
			return nil, err
		}
	}
	opts.Prefetch = max(opts.Prefetch, 2)
	f := newFeed(sampler, x, p.Labels, opts.Prefetch, cfg.Accumulate)
	f.noX, f.reads, f.head = opts.NoFeatures, model.ReadsSelected, model.ReadsSelectedHead()
	return &Stepper{model: model, sampler: sampler, problem: p, onBatch: opts.OnBatch, eval: eval, feed: f, noX: opts.NoFeatures,
		releaseFeed: opts.EvalSampler == "" && exact.heldEstimate() > exact.keepBytes}, nil
}

// Close stops the background sampling.
func (s *Stepper) Close() {
	for _, p := range s.pending {
		s.feed.give(p)
	}
	s.pending = nil
	s.feed.close()
}

func (s *Stepper) Model() *nn.Model { return s.model }
func (s *Stepper) Batches() int     { return s.sampler.Batches() }

// Step runs micro-batch b. The first micro-batch of an optimiser step
// takes all of the step's batches from the feed, so that an unweighted
// loss is the mean over all their loss rows, as one batch of their size.
func (s *Stepper) Step(b train.Batch) (float64, error) {
	if s.noX {
		return 0, errors.New("minibatch: Step on batches without features")
	}
	if b.Micro == 0 {
		if err := s.takeStep(b); err != nil {
			return 0, err
		}
	}
	if b.Micro >= len(s.pending) {
		return 0, fmt.Errorf("minibatch: micro-batch %d of %d has no batch", b.Micro, b.Micros)
	}
	p := s.pending[b.Micro]
	start := time.Now()
	logits := s.model.Forward(p.batch.Blocks, p.x, true)
	loss, dlogits, err := s.Loss(b.Micro, logits)
	if err != nil {
		return 0, err
	}
	s.model.Backward(dlogits)
	s.stats.ComputeSeconds += time.Since(start).Seconds()
	s.progress(b)
	return loss, nil
}

// progress reports micro-batch b done to Options.OnBatch.
func (s *Stepper) progress(b train.Batch) {
	if s.onBatch != nil {
		s.onBatch(b.Epoch, b.Index+1, s.sampler.Batches())
	}
}

// Micro is one micro-batch of an optimiser step, as Micros returns it.
type Micro struct {
	// Blocks has the batch's block per layer (or one for every layer),
	// X the first block's input rows' features (none with
	// Options.NoFeatures).
	Blocks []*nn.Block
	X      nn.Features
}

// Micros takes the optimiser step's micro-batches from the feed, as Step
// does for the step's first (b.Micro must be 0), and returns them for a
// caller that runs the model itself, a range of layers at a time (a
// pipeline stage). Loss gives their losses; they stay valid until the
// next call of Micros, Step, Evaluate or Close.
func (s *Stepper) Micros(b train.Batch) ([]Micro, error) {
	if b.Micro != 0 {
		return nil, fmt.Errorf("minibatch: Micros from micro-batch %d of a step", b.Micro)
	}
	if err := s.takeStep(b); err != nil {
		return nil, err
	}
	out := make([]Micro, len(s.pending))
	for i, p := range s.pending {
		out[i] = Micro{Blocks: p.batch.Blocks, X: p.x}
	}
	return out, nil
}

// Loss returns the loss of micro-batch m of the step taken last, given
// its logits, and the gradient of its logits, both normalised over the
// step as Step's are.
func (s *Stepper) Loss(m int, logits *tensor.Matrix) (float64, *tensor.Matrix, error) {
	if m < 0 || m >= len(s.pending) {
		return 0, nil, fmt.Errorf("minibatch: micro-batch %d of a step of %d", m, len(s.pending))
	}
	p := s.pending[m]
	if w := p.batch.Weight; w != nil {
		// Each weighted batch estimates the mean loss by itself: the
		// step's loss is their mean.
		return s.loss.ForwardWeighted(logits, p.labels, p.batch.Loss, w, float64(len(s.pending)))
	}
	return s.loss.Forward(logits, p.labels, p.batch.Loss, s.norm)
}

// Done counts the seconds a caller of Micros spent running the model on
// the step's micro-batches, and reports them done, as Step does its own.
func (s *Stepper) Done(b train.Batch, seconds float64) {
	s.stats.ComputeSeconds += seconds
	for m := range len(s.pending) {
		s.progress(train.Batch{Epoch: b.Epoch, Index: b.Index + m})
	}
}

// takeStep takes the optimiser step's batches from the feed.
func (s *Stepper) takeStep(b train.Batch) error {
	for _, p := range s.pending { // the last step's batches, done with
		s.feed.give(p)
	}
	s.pending, s.norm = s.pending[:0], 0
	for m := range b.Micros {
		start := time.Now()
		p, err := s.feed.take(b.Epoch, b.Index+m)
		s.stats.WaitSeconds += time.Since(start).Seconds()
		if err != nil {
			s.feed.give(p)
			return err
		}
		s.pending = append(s.pending, p)
		s.norm += float64(len(p.batch.Loss))
		s.count(p)
	}
	if s.norm == 0 {
		s.norm = 1 // no loss rows: the loss and gradient are zero
	}
	return nil
}

// count adds a batch's figures to the stats.
func (s *Stepper) count(p *prepared) { s.add(&s.stats, p) }

// add adds a batch's figures to st.
func (s *Stepper) add(st *Stats, p *prepared) {
	st.Batches++
	st.SampleSeconds += p.sampleSeconds
	st.GatherSeconds += p.gatherSeconds
	st.InputNodes += int64(len(p.batch.Input))
	st.Seeds += int64(len(p.batch.Loss))
	for _, b := range p.batch.Blocks {
		st.InputEdges += int64(blockOperator(b).NNZ())
	}
	if !s.noX {
		st.GatheredBytes += gatheredBytes(p.x, s.feed.x.valueBytes(), p.batch.Blocks)
	}
	st.Flops += batchFlops(s.model.Config, p.batch.Blocks, s.feed.x.x.Sparse == nil)
}

// PrepareAlone samples and gathers every batch of epoch, one after
// another, with the model idle, and returns their figures. In training
// the feed runs beside the model on the cores its products use, so its
// wall time there (Stats' SampleSeconds and GatherSeconds) counts, too,
// the time it waited for a core; alone it is what sampling and gathering
// cost. Training takes up where it was at the next step, unchanged: the
// feed starts again there.
func (s *Stepper) PrepareAlone(epoch int) (Stats, error) {
	var st Stats
	s.feed.close()
	p := <-s.feed.free
	defer s.feed.give(p)
	for b := range s.sampler.Batches() {
		if s.feed.fill(p, epoch, b); p.err != nil {
			return st, fmt.Errorf("sampling batch %d of epoch %d: %w", b, epoch, p.err)
		}
		s.add(&st, p)
	}
	return st, nil
}

// TakeStats returns the figures since the last call and starts anew.
func (s *Stepper) TakeStats() Stats {
	st := s.stats
	s.stats = Stats{}
	return st
}

// Assessed reports whether Evaluate's Assessment holds the per-class sums
// behind macro-F1: exact evaluation's does, sampled evaluation's does not.
// A caller that adds zero sums of its own to them (a pipeline's other
// stages) gives them this shape.
func (s *Stepper) Assessed() bool {
	_, sampled := s.eval.(*sampledEvaluator)
	return !sampled
}

// Evaluate is exact: layer-wise inference over every node with its whole
// neighbourhood. The last step's batches are done with.
func (s *Stepper) Evaluate(int) (train.Evaluation, error) {
	if s.releaseFeed {
		for _, p := range s.pending {
			s.feed.give(p)
		}
		s.pending = s.pending[:0]
		s.feed.release()
		// Their pages, scattered, cannot hold evaluation's outputs, each
		// of them one large allocation: return them to the system now
		// rather than hold both. One collection, against minutes of
		// evaluation.
		debug.FreeOSMemory()
	}
	return s.eval.evaluate()
}
