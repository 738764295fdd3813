package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
)

// Options are the settings of a pipeline run beyond its training
// configuration.
type Options struct {
	// Stages is the number of stages, P; Layers[s], if set, the number of
	// layers stage s holds (default: Split).
	Stages int
	Layers []int
	// Micros is the number of micro-batches of a mini-batch, M: each is a
	// batch of the sampler (form Sampler, BatchSize seeds), and the
	// optimiser steps once per M of them.
	Micros    int
	Sampler   string
	BatchSize int
	// Options are every stage's mini-batch settings; OnBatch reports the
	// first stage's progress, and EvalSampler and Precision's evaluation
	// part concern the first stage, which evaluates.
	minibatch.Options
	// Timeout bounds every wait for another stage's activations,
	// gradients or parameters (default DefaultTimeout): a dead or stalled
	// stage is an error naming it within it.
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 2 * time.Minute

// Result is a run's outcome: Stages holds each stage's figures over the
// run, and Model, on the first stage, the whole model with the best
// epoch's parameters (on the others, their own layers' only).
type Result struct {
	train.Result
	Model  *nn.Model
	Stages []Figures
	// Layers is each stage's first layer, and last the layer count.
	Layers []int
}

func (o *Options) check(cfg train.Config) ([]int, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	layers := cfg.Model.WithDefaults().Layers
	switch {
	case o.Micros < 1:
		return nil, fmt.Errorf("pipeline: %d micro-batches; want at least 1", o.Micros)
	case cfg.Accumulate > 1:
		return nil, errors.New("pipeline: the micro-batches are the accumulation: leave Accumulate unset")
	case o.Layers == nil:
		counts, err := Split(layers, o.Stages)
		if err != nil {
			return nil, err
		}
		o.Layers = counts
	case len(o.Layers) != o.Stages:
		return nil, fmt.Errorf("pipeline: layer counts %v for %d stages", o.Layers, o.Stages)
	}
	return bounds(o.Layers, layers)
}

// Run trains with every stage a goroutine of this process, talking through
// point-to-point messages exactly as over a network, and reports every
// epoch (the first stage's record) to onEpoch. The Result is the first
// stage's.
func Run(ctx context.Context, cfg train.Config, p train.Problem, opts Options, onEpoch func(metrics.Epoch) error) (Result, error) {
	if _, err := opts.check(cfg); err != nil {
		return Result{}, err
	}
	var res Result
	err := comm.Run(opts.Stages, func(c comm.Communicator) error {
		if c.Rank() != 0 {
			_, err := RunRank(ctx, c, cfg, p, opts, nil)
			return err
		}
		var err error
		res, err = RunRank(ctx, c, cfg, p, opts, onEpoch)
		return err
	})
	return res, err
}

// RunRank runs stage c.Rank() of a run of c.Size() = opts.Stages stages,
// and reports every epoch to onEpoch (if not nil): its losses and metrics,
// every stage's figures, and the stage's own sampling. The first stage's
// records are the run's.
func RunRank(ctx context.Context, c comm.Communicator, cfg train.Config, p train.Problem, opts Options, onEpoch func(metrics.Epoch) error) (Result, error) {
	cuts, err := opts.check(cfg)
	if err != nil {
		return Result{}, err
	}
	if c.Size() != opts.Stages {
		return Result{}, fmt.Errorf("pipeline: %d ranks for %d stages", c.Size(), opts.Stages)
	}
	s := c.Rank()
	cfg.Model = cfg.Model.WithDefaults()
	cfg.Accumulate = opts.Micros
	red := &reducer{train.CommReducer{Comm: c}}
	cfg.Reducer = red
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return Result{}, err
	}
	sampler, err := sample.New(opts.Sampler, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: opts.BatchSize,
		Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed})
	if err != nil {
		return Result{}, err
	}
	mo := opts.Options
	if s > 0 {
		// The evaluation settings stay: the stage's zero sums take the
		// first stage's shape (Evaluate).
		mo.NoFeatures, mo.OnBatch = true, nil
	}
	if mo.EvalSampler != "" && mo.EvalBatchSize == 0 {
		mo.EvalBatchSize = opts.BatchSize
	}
	if s == 0 && mo.Precision == train.BF16 {
		// The first stage gathers the batches' features: in bf16, as one
		// process's mini-batch run holds them (minibatch.Run).
		p = p.WithBF16Features()
	}
	mb, err := minibatch.New(cfg, p, sampler, mo)
	if err != nil {
		return Result{}, err
	}
	defer mb.Close()
	st := &stage{c: c, mb: mb, cuts: cuts, s: s, last: opts.Stages - 1, classes: cfg.Model.Classes,
		timeout: opts.Timeout, replicas: []*nn.Model{mb.Model()}}
	loop, err := train.New(cfg, st)
	if err != nil {
		return Result{}, err
	}
	rep := &reporter{st: st, red: red, onEpoch: onEpoch, totals: make([]Figures, opts.Stages)}
	res := Result{Model: mb.Model(), Layers: cuts, Stages: rep.totals}
	res.Result, err = train.RunInGroup(ctx, loop, train.Hooks{OnEpoch: rep.epoch}, c)
	if err != nil {
		return res, err
	}
	// The loop has restored the best epoch's parameters: the first
	// stage gathers them.
	if s > 0 {
		err = st.sendParams()
	} else {
		err = st.gatherParams()
	}
	return res, err
}

// reporter gathers every stage's figures after each epoch, on every stage,
// and reports the epoch.
type reporter struct {
	st      *stage
	red     *reducer
	onEpoch func(metrics.Epoch) error
	totals  []Figures
}

func (r *reporter) epoch(m train.Metrics) error {
	f := r.st.figures
	r.st.figures = Figures{}
	all, err := r.red.Gather([]float64{f.ComputeSeconds, f.WaitSeconds, float64(f.ActivationBytes), float64(f.GradientBytes)})
	if err != nil {
		return fmt.Errorf("pipeline: gathering the stages' figures: %w", err)
	}
	st := r.st.mb.TakeStats()
	e := metrics.Epoch{Epoch: m.Epoch, Loss: m.Loss, TrainAcc: m.TrainAcc, ValAcc: m.ValAcc, TestAcc: m.TestAcc,
		ValF1: m.ValF1, TestF1: m.TestF1, ValAUC: m.ValAUC, TestAUC: m.TestAUC, ValLoss: m.ValLoss,
		EpochSeconds: m.EpochSeconds, StepSeconds: m.StepSeconds, Evaluated: m.Evaluated, EvalSeconds: m.EvalSeconds, Ratio: 1,
		RSSBytes: metrics.ResidentBytes(), Batches: st.Batches, SampleSeconds: st.SampleSeconds,
		GatherSeconds: st.GatherSeconds, GatheredBytes: st.GatheredBytes, Flops: st.Flops}
	if st.Batches > 0 {
		e.InputNodes = float64(st.InputNodes) / float64(st.Batches)
		e.InputEdges = float64(st.InputEdges) / float64(st.Batches)
	}
	for s, x := range all {
		g := Figures{ComputeSeconds: x[0], WaitSeconds: x[1], ActivationBytes: int64(x[2]), GradientBytes: int64(x[3])}
		t := &r.totals[s]
		t.ComputeSeconds += g.ComputeSeconds
		t.WaitSeconds += g.WaitSeconds
		t.ActivationBytes += g.ActivationBytes
		t.GradientBytes += g.GradientBytes
		e.BytesFwd += g.ActivationBytes
		e.BytesBwd += g.GradientBytes
		e.ComputeSeconds = max(e.ComputeSeconds, g.ComputeSeconds)
		e.CommSeconds = max(e.CommSeconds, g.WaitSeconds)
		e.WorkerCompute = append(e.WorkerCompute, g.ComputeSeconds)
	}
	if r.onEpoch == nil {
		return nil
	}
	return r.onEpoch(e)
}
