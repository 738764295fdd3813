package dataparallel

import (
	"fmt"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
)

// Stepper is one worker's train.Stepper: it trains on batches of its own
// seeds, sampled across the parts, and evaluates its own nodes.
type Stepper struct {
	train.Stateless
	sh      *share
	model   *nn.Model
	sampler partSampler
	batcher *batcher
	eval    *evaluator
	batch   sample.Batch
	loss    nn.CrossEntropy
	norm    float64 // the step's loss normaliser (partSampler.norm)
	stats   Stats
	sched   compress.Schedule // of the feature rows' compression, or nil
	epoch   int               // the last epoch stepped
	onBatch func(epoch, done, batches int)
}

// Stats are a worker's figures of the batches since the last TakeStats.
type Stats struct {
	Batches int
	// SampleSeconds is sampling the blocks, GatherSeconds fetching the
	// input features, both with the waits for the other workers.
	// WaitSeconds is what the model waited for its batches: a worker
	// samples and fetches in its step, before the model runs, so it is
	// the two together, as measured from the step's start.
	SampleSeconds, GatherSeconds, ComputeSeconds float64
	WaitSeconds                                  float64
	// InputNodes are the batches' input rows, InputEdges their blocks'
	// entries (every block's operator), Seeds their loss rows.
	InputNodes, InputEdges, Seeds int64
}

// New returns the stepper of the worker of c holding sp, training cfg's
// model on the batches of the sampler spec (KIND:ARGS, as sample.New
// reads it; the seed-driven samplers draw batchSize of the worker's
// seeds). Every worker of c calls New with its own part.
func New(c comm.Communicator, cfg train.Config, sp *partstore.Part, spec string, batchSize int) (*Stepper, error) {
	if batchSize < 1 {
		return nil, fmt.Errorf("dataparallel: batch size %d; want at least 1", batchSize)
	}
	cfg.Model = cfg.Model.WithDefaults()
	if sp.Classes > 0 && cfg.Model.Classes == 0 {
		cfg.Model.Classes = sp.Classes
	}
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return nil, err
	}
	form, err := sample.ParsePartSpec(spec, cfg.Model.Layers)
	if err != nil {
		return nil, err
	}
	sh, err := newShare(c, sp)
	if err != nil {
		return nil, err
	}
	for _, set := range [][]int32{sp.Train, sp.Val, sp.Test} {
		for _, r := range set {
			if r < 0 || int(r) >= len(sh.labels) || sh.labels[r] < 0 || int(sh.labels[r]) >= cfg.Model.Classes {
				return nil, fmt.Errorf("dataparallel: a node of the split has no label in [0, %d)", cfg.Model.Classes)
			}
		}
	}
	t := newBatcher(sh)
	sampler, err := newPartSampler(samplerConfig{sh: sh, t: t, spec: form, batchSize: batchSize, layers: cfg.Model.Layers, agg: agg, seed: cfg.Model.Seed})
	if err != nil {
		return nil, err
	}
	whole, err := sample.NewPartNeighbor(sh.pg, []int{-1}, 1, agg, cfg.Model.Seed)
	if err != nil {
		return nil, err
	}
	model, err := train.NewModel(cfg, sh.x.cols())
	if err != nil {
		return nil, err
	}
	// Workers multiply in float32 at either precision: each sums its weight
	// gradient over its own rows and the all-reduce adds the sums, in
	// another order than one process's sum over the union batch (whose
	// blocks may also aggregate before they multiply where a worker's do
	// not); operands rounded to bf16 would turn those float32-sized
	// differences into bf16-sized ones, so N workers would drift from one
	// process's model (docs/minibatch.md).
	return &Stepper{sh: sh, model: model, sampler: sampler, batcher: t, eval: newEvaluator(sh, whole, model, sp)}, nil
}

// Compress makes the training batches' feature rows travel encoded by
// codec, at the ratio sched gives each epoch (from 0 for the first).
// Evaluation's rows travel as they are. Adaptive schedules, which watch
// the validation loss, are not supported.
func (s *Stepper) Compress(codec compress.Compressor, sched compress.Schedule) error {
	if _, adaptive := sched.(compress.Observer); adaptive {
		return fmt.Errorf("dataparallel: schedule %s adapts to the validation loss; give a schedule of the epoch alone", sched)
	}
	s.batcher.codec, s.sched = codec, sched
	return nil
}

// AtFloor reports whether the last epoch's feature rows travelled at the
// schedule's final ratio (always, without compression).
func (s *Stepper) AtFloor() bool {
	return s.sched == nil || compress.AtFloor(s.sched, s.sched.Ratio(s.epoch-1))
}

// Ratio is the compression ratio of the last batch's feature rows (1
// without compression).
func (s *Stepper) Ratio() float64 {
	if s.sched == nil {
		return 1
	}
	return s.batcher.ratio
}

func (s *Stepper) Model() *nn.Model { return s.model }

// Batches is the number of batches of an epoch, the same on every
// worker: for the seed-driven samplers the most any worker's seeds make.
func (s *Stepper) Batches() int { return s.sampler.batches() }

// Step runs micro-batch b of this worker. A worker without loss rows in
// b still samples (answering the others) and contributes a zero
// gradient; an unweighted loss is normalised by the step's loss rows over
// every worker.
func (s *Stepper) Step(b train.Batch) (float64, error) {
	if b.Micro == 0 {
		s.norm = s.sampler.norm(b.Epoch, b.Index, b.Micros)
	}
	s.epoch = b.Epoch
	if s.sched != nil {
		s.batcher.ratio = max(s.sched.Ratio(b.Epoch-1), 1)
		s.batcher.key = compress.Key{Seed: s.model.Config.Seed, Step: (b.Epoch-1)*s.Batches() + b.Index}
	}
	start := time.Now()
	labels, err := s.sampler.sample(b.Epoch, b.Index, &s.batch)
	if err != nil {
		return 0, err
	}
	sampled := time.Now()
	s.stats.SampleSeconds += sampled.Sub(start).Seconds()
	var x nn.Features
	if s.sampler.local() {
		x, err = s.batcher.gatherOwn(s.batch.Input)
	} else {
		x, err = s.batcher.gather(s.batch.Input)
	}
	if err != nil {
		return 0, err
	}
	ready := time.Now()
	s.stats.GatherSeconds += ready.Sub(sampled).Seconds()
	s.stats.WaitSeconds += ready.Sub(start).Seconds()
	s.stats.Batches++
	s.stats.Seeds += int64(len(s.batch.Loss))
	s.stats.InputNodes += int64(len(s.batch.Input))
	for _, blk := range s.batch.Blocks {
		s.stats.InputEdges += int64(blockEntries(blk))
	}
	start = time.Now()
	defer func() {
		s.stats.ComputeSeconds += time.Since(start).Seconds()
		if s.onBatch != nil {
			s.onBatch(b.Epoch, b.Index+1, s.Batches())
		}
	}()
	if len(s.batch.Loss) == 0 {
		// Nothing to learn from here: a zero gradient, and the dropout
		// clock moves on as on the workers that ran a pass.
		for _, p := range s.model.Params() {
			clear(p.Grad.Data)
		}
		s.model.SetStep(s.model.Step() + 1)
		return 0, nil
	}
	logits := s.model.Forward(s.batch.Blocks, x, true)
	loss, dlogits, err := s.loss.ForwardWeighted(logits, labels, s.batch.Loss, s.batch.Weight, s.norm)
	if err != nil {
		return 0, err
	}
	s.model.Backward(dlogits)
	return loss, nil
}

// TakeStats returns the figures since the last call and starts anew.
func (s *Stepper) TakeStats() Stats {
	st := s.stats
	s.stats = Stats{}
	return st
}

// Evaluate is exact layer-wise inference over this worker's nodes.
func (s *Stepper) Evaluate(int) (train.Evaluation, error) { return s.eval.evaluate() }

// blockEntries is the entries of the operator block b holds for its
// model (a block holds the one its aggregation reads).
func blockEntries(b *nn.Block) int {
	ops := b.Operators()
	switch {
	case ops.GCN != nil:
		return ops.GCN.NNZ()
	case ops.Mean != nil:
		return ops.Mean.NNZ()
	case ops.Loops != nil:
		return ops.Loops.NNZ()
	}
	return 0
}
