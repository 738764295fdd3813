package job

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"reflect"
	"time"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/pipeline"
)

// PipelineSpec is a pipeline run (see train/pipeline): Stages stages, each
// holding a range of the model's layers (Layers[s] of them, or
// pipeline.Split's), train on mini-batches of Micros micro-batches of the
// Spec's sampler and batch size.
type PipelineSpec struct {
	Stages, Micros int
	Layers         []int
	// Timeout bounds every wait for another stage (0:
	// pipeline.DefaultTimeout).
	Timeout time.Duration
}

// checkPipeline checks a pipeline run's settings that need no data.
func (s *Spec) checkPipeline() error {
	p := s.Pipeline
	layers := s.Train.Model.WithDefaults().Layers
	switch {
	case p == nil:
		return nil
	case s.Sampler == "":
		return errors.New("--mode pipeline trains on sampled mini-batches: add --sampler")
	case s.PartDir != "" || (s.Parts > 1 && s.Place.Size <= 1):
		return errors.New("--mode pipeline gives every stage the whole graph: drop --parts and --part-dir (--stages sets the stages)")
	case s.Place.Size > 1 && s.Place.Size != p.Stages:
		return fmt.Errorf("--mode pipeline with --stages %d needs %d processes, one per stage; the job has %d", p.Stages, p.Stages, s.Place.Size)
	case s.CheckpointDir != "" || s.Resume != "":
		return errors.New("--mode pipeline does not checkpoint: drop --checkpoint-dir and --resume")
	case s.Train.Accumulate > 1:
		return errors.New("--accumulate with --mode pipeline: its micro-batches are the accumulation (--micro-batches)")
	case s.GradCompress != "" && s.GradCompress != "none", s.Codec != "" && s.Codec != "none", s.Schedule != "", s.CompressLast:
		return errors.New("--mode pipeline sends activations between stages whole and sums no gradients: drop --grad-compress, --compress, --schedule and --compress-last")
	case s.BatchSize < 1:
		return fmt.Errorf("--batch-size %d: want at least 1", s.BatchSize)
	case p.Micros < 1:
		return fmt.Errorf("--micro-batches %d: want at least 1", p.Micros)
	case p.Stages < 1 || p.Stages > layers:
		return fmt.Errorf("--stages %d: a model of %d layers splits into 1 to %d stages", p.Stages, layers, layers)
	case p.Layers != nil && len(p.Layers) != p.Stages:
		return fmt.Errorf("--stage-layers %v: one count per stage, %d of them", p.Layers, p.Stages)
	}
	sum := 0
	for _, n := range p.Layers {
		if n < 1 {
			return fmt.Errorf("--stage-layers %v: every stage holds at least one layer", p.Layers)
		}
		sum += n
	}
	if p.Layers != nil && sum != layers {
		return fmt.Errorf("--stage-layers %v: %d layers for a model of %d", p.Layers, sum, layers)
	}
	return nil
}

// runPipeline trains with the model's layers split into stages: in this
// process, or as this process's stage of a multi-process job.
func (s *Spec) runPipeline(ctx context.Context, in *input, onEpoch func(metrics.Epoch) error) (train.Result, *nn.Model, error) {
	// Ranks are stages, not parts of the graph.
	s.Parts = 1
	if s.Precision == string(train.BF16) {
		// The float32 features go once converted: the first stage reads
		// these, and nothing reads the float32 ones.
		in.problem = in.problem.WithBF16Features()
	}
	p := s.Pipeline
	opts := pipeline.Options{Stages: p.Stages, Layers: p.Layers, Micros: p.Micros, Sampler: s.Sampler, BatchSize: s.BatchSize,
		Options: minibatch.Options{OnBatch: s.BatchProgress, EvalSampler: s.EvalSampler, Precision: train.Precision(s.Precision)},
		Timeout: p.Timeout}
	var (
		r   pipeline.Result
		err error
	)
	if s.Place.Size > 1 {
		r, err = s.runPipelineRank(ctx, in, opts, onEpoch)
	} else {
		r, err = pipeline.Run(ctx, s.Train, in.problem, opts, onEpoch)
	}
	if se := (sample.SpecError{}); errors.As(err, &se) {
		err = specError(fmt.Errorf("--sampler: %v", err))
	}
	if err != nil {
		return train.Result{}, nil, err
	}
	s.pipeline = &r
	return r.Result, r.Model, nil
}

// runPipelineRank runs this process's stage of a multi-process job, once
// every stage has agreed on the settings.
func (s *Spec) runPipelineRank(ctx context.Context, in *input, opts pipeline.Options, onEpoch func(metrics.Epoch) error) (pipeline.Result, error) {
	if s.Launch == nil {
		return pipeline.Result{}, specError(errors.New("a stage of a multi-process job needs its launch settings"))
	}
	logger := log.New(s.Log, "", log.LstdFlags)
	c, err := s.Launch.Connect(ctx, os.Getenv, logger.Printf)
	if err != nil {
		return pipeline.Result{}, err
	}
	defer c.Close()
	s.record["pipeline"] = formatSetting(reflect.ValueOf(s.Pipeline))
	if err := s.agreeSettings(c); err != nil {
		return pipeline.Result{}, lostPeer(err, c, 0)
	}
	last := 0
	r, err := pipeline.RunRank(ctx, c, s.Train, in.problem, opts, func(e metrics.Epoch) error {
		last = e.Epoch
		return onEpoch(e)
	})
	if err == nil || errors.Is(err, train.ErrInterrupted) {
		// Every stage is done with the others before any closes.
		if berr := c.Barrier("pipeline.done"); berr != nil && err == nil {
			err = berr
		}
	}
	if err != nil && !errors.Is(err, train.ErrInterrupted) {
		c.Abort(err)
		err = lostPeer(err, c, last)
	}
	return r, err
}

// summarisePipeline adds a pipeline run's figures to the summary.
func (s *Spec) summarisePipeline(sum *Summary) {
	p, r := s.Pipeline, s.pipeline
	if p == nil || r == nil {
		return
	}
	sum.Mode, sum.Stages, sum.MicroBatches = "pipeline", p.Stages, p.Micros
	sum.BubbleFraction = pipeline.Bubble(p.Stages, p.Micros)
	train := 0.0
	for _, x := range r.StepSeconds {
		train += x
	}
	sum.TrainSeconds = train
	for i, f := range r.Stages {
		sum.StageLayers = append(sum.StageLayers, r.Layers[i+1]-r.Layers[i])
		sum.StageComputeSeconds = append(sum.StageComputeSeconds, f.ComputeSeconds)
		sum.StageWaitSeconds = append(sum.StageWaitSeconds, f.WaitSeconds)
	}
}
