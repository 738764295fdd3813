package minibatch

import (
	"context"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
)

// RunOptions are the settings of a mini-batch run beyond its training
// configuration.
type RunOptions struct {
	// Sampler is the sampler's form (sample.Forms), e.g.
	// "neighbor:15,10,5"; BatchSize its batch size.
	Sampler   string
	BatchSize int
	Options

	// Resume continues from a checkpoint; SaveCheckpoint, if set, is
	// given the run's state every CheckpointEvery epochs and when the run
	// is interrupted.
	Resume          *checkpoint.State
	SaveCheckpoint  func(*checkpoint.State) error
	CheckpointEvery int
}

// Run trains p's model with mini-batches from opts' sampler, in this
// process, and calls onEpoch (if not nil) after every epoch. At bf16
// precision it holds p's dense features in bfloat16: a caller that passes
// p.WithBF16Features() and drops its own p lets the float32 matrix go.
func Run(ctx context.Context, cfg train.Config, p train.Problem, opts RunOptions, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if opts.Precision == train.BF16 {
		p = p.WithBF16Features()
	}
	cfg.Model = cfg.Model.WithDefaults()
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return train.Result{}, nil, err
	}
	sampler, err := sample.New(opts.Sampler, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: opts.BatchSize,
		Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed})
	if err != nil {
		return train.Result{}, nil, err
	}
	if opts.EvalSampler != "" && opts.EvalBatchSize == 0 {
		opts.EvalBatchSize = opts.BatchSize
	}
	s, err := New(cfg, p, sampler, opts.Options)
	if err != nil {
		return train.Result{}, nil, err
	}
	defer s.Close()
	loop, err := train.New(cfg, s)
	if err != nil {
		return train.Result{}, nil, err
	}
	if opts.Resume != nil {
		if err := loop.Restore(opts.Resume); err != nil {
			return train.Result{}, nil, err
		}
	}
	hooks := train.Hooks{SaveCheckpoint: opts.SaveCheckpoint, CheckpointEvery: opts.CheckpointEvery,
		OnEpoch: func(m train.Metrics) error {
			if onEpoch == nil {
				s.TakeStats()
				return nil
			}
			return onEpoch(epochMetrics(m, s.TakeStats()))
		}}
	res, err := loop.Run(ctx, hooks)
	return res, loop, err
}

// epochMetrics is the record of an epoch of m with the batches' figures.
func epochMetrics(m train.Metrics, st Stats) metrics.Epoch {
	e := metrics.Epoch{Epoch: m.Epoch, Loss: m.Loss, TrainAcc: m.TrainAcc, ValAcc: m.ValAcc, TestAcc: m.TestAcc,
		ValF1: m.ValF1, TestF1: m.TestF1, ValAUC: m.ValAUC, TestAUC: m.TestAUC,
		ValLoss: m.ValLoss, EpochSeconds: m.EpochSeconds, StepSeconds: m.StepSeconds, Evaluated: m.Evaluated, EvalSeconds: m.EvalSeconds,
		Ratio: 1, ComputeSeconds: st.ComputeSeconds, WorkerCompute: []float64{st.ComputeSeconds},
		RSSBytes: metrics.ResidentBytes(), Batches: st.Batches, SampleSeconds: st.SampleSeconds,
		GatherSeconds: st.GatherSeconds, WaitSeconds: st.WaitSeconds, GatheredBytes: st.GatheredBytes, Flops: st.Flops}
	if st.Batches > 0 {
		e.InputNodes = float64(st.InputNodes) / float64(st.Batches)
		e.InputEdges = float64(st.InputEdges) / float64(st.Batches)
	}
	return e
}
