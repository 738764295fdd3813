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
	deal    dealer
	batcher *batcher
	eval    *evaluator
	batch   sample.Batch
	loss    nn.CrossEntropy
	labels  []int32
	norm    float64 // the step's seeds over every worker
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
	SampleSeconds, GatherSeconds, ComputeSeconds float64
	InputNodes, Seeds                            int64
}

// New returns the stepper of the worker of c holding sp, training cfg's
// model on batches of batchSize of its seeds drawn by the neighbour
// sampler spec (neighbor:F1,F2,...). Every worker of c calls New with its
// own part.
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
	fanouts, err := sample.ParseFanouts(spec, cfg.Model.Layers)
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
	sampler, err := sample.NewPartNeighbor(sh.pg, fanouts, cfg.Model.Layers, agg, cfg.Model.Seed)
	if err != nil {
		return nil, err
	}
	whole, err := sample.NewPartNeighbor(sh.pg, []int{-1}, 1, agg, cfg.Model.Seed)
	if err != nil {
		return nil, err
	}
	model, err := train.NewModel(cfg, sh.x.Cols)
	if err != nil {
		return nil, err
	}
	return &Stepper{sh: sh, model: model, batcher: newBatcher(sh, sampler),
		deal: dealer{train: sh.train, size: batchSize, seed: cfg.Model.Seed, counts: sh.trainCounts},
		eval: newEvaluator(sh, whole, model, sp)}, nil
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

// Batches is the most batches any worker's seeds make.
func (s *Stepper) Batches() int { return s.deal.batches() }

// Step runs micro-batch b of this worker. A worker without seeds for b
// still samples (answering the others) and contributes a zero gradient;
// the loss is normalised by the step's seeds over every worker.
func (s *Stepper) Step(b train.Batch) (float64, error) {
	if b.Micro == 0 {
		s.norm = 0
		for m := range b.Micros {
			s.norm += float64(s.deal.total(b.Index + m))
		}
	}
	s.epoch = b.Epoch
	if s.sched != nil {
		s.batcher.ratio = max(s.sched.Ratio(b.Epoch-1), 1)
		s.batcher.key = compress.Key{Seed: s.model.Config.Seed, Step: (b.Epoch-1)*s.Batches() + b.Index}
	}
	start := time.Now()
	seeds := s.deal.seeds(b.Epoch, b.Index)
	x, err := s.batcher.sample(b.Epoch, seeds, &s.batch)
	if err != nil {
		return 0, err
	}
	gathered := s.batcher.gatherSeconds
	s.batcher.gatherSeconds = 0
	s.stats.GatherSeconds += gathered
	s.stats.SampleSeconds += time.Since(start).Seconds() - gathered
	s.stats.Batches++
	s.stats.Seeds += int64(len(seeds))
	s.stats.InputNodes += int64(len(s.batch.Input))
	start = time.Now()
	defer func() {
		s.stats.ComputeSeconds += time.Since(start).Seconds()
		if s.onBatch != nil {
			s.onBatch(b.Epoch, b.Index+1, s.Batches())
		}
	}()
	if len(seeds) == 0 || s.norm == 0 {
		// Nothing to learn from here: a zero gradient, and the dropout
		// clock moves on as on the workers that ran a pass.
		for _, p := range s.model.Params() {
			clear(p.Grad.Data)
		}
		s.model.SetStep(s.model.Step() + 1)
		return 0, nil
	}
	s.labels = s.labels[:0]
	for _, v := range s.batch.Output {
		s.labels = append(s.labels, s.sh.labels[s.sh.row(v)])
	}
	logits := s.model.Forward(s.batch.Blocks, nn.DenseFeatures(x), true)
	loss, dlogits, err := s.loss.Forward(logits, s.labels, s.batch.Loss, s.norm)
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
