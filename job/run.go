package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
	"github.com/graft-gnn/graft/train/minibatch"
)

// Run runs the job. A cancelled ctx stops every worker after the same
// epoch, with the job's checkpoint saved (if it keeps them): the error then
// wraps train.ErrInterrupted and says how to resume.
func Run(ctx context.Context, s Spec) (Summary, error) {
	if s.Log == nil {
		s.Log = io.Discard
	}
	multi, leader := s.Place.Size > 1, s.Place.Rank == 0
	if multi {
		s.Parts = s.Place.Size
	}
	if s.Parts < 0 {
		return Summary{}, specError(fmt.Errorf("--parts %d: want at least 1", s.Parts))
	}
	if s.CheckpointEvery < 0 {
		return Summary{}, specError(fmt.Errorf("--checkpoint-every %d: want 0 or more", s.CheckpointEvery))
	}
	if _, err := nn.ParseLayout(s.SaveFormat); err != nil {
		return Summary{}, specError(fmt.Errorf("--save-format: %v", err))
	}
	if err := s.CheckOutputs(); err != nil {
		return Summary{}, err
	}
	start := time.Now()
	in, err := s.load()
	if err != nil {
		return Summary{}, err
	}
	if took := time.Since(start); took > 5*time.Second && leader {
		fmt.Fprintf(s.Log, "graft train: %s loaded in %.0f s\n", in.name, took.Seconds())
	}
	s.Parts = max(s.Parts, 1)
	s.Train.Model.Classes = in.classes
	if s.Train.Metric == train.ROCAUC && in.classes != 2 {
		return Summary{}, specError(fmt.Errorf("--metric auc: dataset %s has %d classes, and ROC-AUC is for binary tasks; use --metric acc or f1", in.name, in.classes))
	}
	opts, schedule, err := s.compression()
	if err != nil {
		return Summary{}, err
	}
	if s.RecipeNote != "" && leader {
		fmt.Fprintln(s.Log, s.RecipeNote)
	}
	if note := s.unusedWithOneWorker(); note != "" && leader {
		fmt.Fprintf(s.Log, "graft train: %s have no effect with one worker: nothing crosses a boundary (add --parts N)\n", note)
	}
	var rec *metrics.Recorder
	if leader {
		sinks, err := s.metricSinks()
		if err != nil {
			return Summary{}, err
		}
		rec = metrics.NewRecorder(sinks...)
		defer rec.Close()
	}
	if err := s.checkpoints(&opts, in, schedule, multi); err != nil {
		return Summary{}, err
	}
	onEpoch := func(e metrics.Epoch) error {
		if s.Progress != nil {
			s.Progress(e)
		}
		return rec.Record(e)
	}
	var res train.Result
	var loop *train.Loop
	switch {
	case s.EvalSampler != "" && s.Sampler == "":
		err = specError(errors.New("--eval-sampler samples evaluation's batches of a mini-batch run: add --sampler"))
	case s.Sampler != "":
		res, loop, err = s.runMiniBatch(ctx, in, opts, onEpoch)
	case multi:
		res, loop, err = s.runWorker(ctx, in, opts, onEpoch)
	default:
		res, loop, err = s.runInProcess(ctx, in, opts, onEpoch)
	}
	switch {
	case errors.Is(err, train.ErrNotFinite):
		return Summary{}, fmt.Errorf("%v; lower the learning rate with --lr, or check the features for extreme values", err)
	case errors.Is(err, train.ErrInterrupted):
		if s.CheckpointDir != "" {
			return Summary{}, fmt.Errorf("%v; its checkpoint is in %s: continue with --resume %s", err, s.CheckpointDir, s.CheckpointDir)
		}
		return Summary{}, fmt.Errorf("%v; nothing was saved (use --checkpoint-dir to keep interrupted runs)", err)
	case err != nil:
		return Summary{}, err
	case !leader:
		return Summary{}, nil
	}
	if s.Parts > 1 && res.FloorEpoch == 0 {
		fmt.Fprintf(s.Log, "graft train: the compression schedule %s had not reached its final ratio by the last epoch (%d); the kept epoch was trained at a higher ratio (raise --epochs, or give a schedule that ends sooner)\n", schedule, res.Epochs)
	}
	return s.summarise(in, res, loop, rec.Totals(), schedule)
}

// runInProcess trains every part in this process: one goroutine each.
func (s *Spec) runInProcess(ctx context.Context, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if in.manifest == nil {
		return fullgraph.RunInProcess(ctx, s.Train, in.problem, in.layout, opts, onEpoch)
	}
	var res train.Result
	var loop *train.Loop
	err := comm.Run(in.manifest.Parts, func(c comm.Communicator) error {
		cb := onEpoch
		if c.Rank() != 0 {
			cb = nil
		}
		r, l, err := s.runRank(ctx, c, in, opts, cb)
		if c.Rank() == 0 {
			res, loop = r, l
		}
		return err
	})
	return res, loop, err
}

// runMiniBatch trains on sampled mini-batches in this process.
func (s *Spec) runMiniBatch(ctx context.Context, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if s.Parts > 1 || in.manifest != nil {
		return train.Result{}, nil, specError(errors.New("--sampler trains in one process on the whole graph for now: drop --parts and --part-dir"))
	}
	if s.BatchSize < 1 {
		return train.Result{}, nil, specError(fmt.Errorf("--batch-size %d: want at least 1", s.BatchSize))
	}
	mo := minibatch.RunOptions{Sampler: s.Sampler, BatchSize: s.BatchSize, Options: minibatch.Options{OnBatch: s.BatchProgress, EvalSampler: s.EvalSampler},
		Resume: opts.Resume, SaveCheckpoint: opts.SaveCheckpoint, CheckpointEvery: opts.CheckpointEvery}
	res, loop, err := minibatch.Run(ctx, s.Train, in.problem, mo, onEpoch)
	if se := (sample.SpecError{}); errors.As(err, &se) {
		err = specError(fmt.Errorf("--sampler: %v", err))
	}
	return res, loop, err
}

// runRank trains rank c.Rank()'s part.
func (s *Spec) runRank(ctx context.Context, c comm.Communicator, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if in.manifest == nil {
		return fullgraph.RunWorker(ctx, c, s.Train, in.problem, in.layout, opts, onEpoch)
	}
	sp, err := in.manifest.ReadPart(s.PartDir, c.Rank())
	if err != nil {
		return train.Result{}, nil, err
	}
	return fullgraph.RunStoredWorker(ctx, c, s.Train, sp, opts, onEpoch)
}

// metricSinks opens the metrics file and the Prometheus endpoint.
func (s *Spec) metricSinks() ([]metrics.Sink, error) {
	var sinks []metrics.Sink
	if s.MetricsFile != "" {
		f, err := metrics.CreateJSONLines[metrics.Epoch](s.MetricsFile)
		if err != nil {
			return nil, fmt.Errorf("metrics file: %v", err)
		}
		sinks = append(sinks, f)
	}
	if s.MetricsAddr != "" {
		addr, all := s.MetricsAddr, false
		if host, _, err := net.SplitHostPort(addr); err == nil {
			if host == "" {
				addr = "127.0.0.1" + addr
			}
			all = host != "" // an address the user typed out, such as 0.0.0.0
		}
		p, err := metrics.ServePrometheus(addr, metrics.PrometheusOptions{AllInterfaces: all})
		if err != nil {
			for _, sink := range sinks {
				sink.Close()
			}
			return nil, fmt.Errorf("--metrics-addr: %v", err)
		}
		fmt.Fprintf(s.Log, "serving metrics at http://%s/metrics\n", p.Addr())
		sinks = append(sinks, p)
	}
	return sinks, nil
}

// summarise saves the model (if asked) and sums the job up.
func (s *Spec) summarise(in *input, res train.Result, loop *train.Loop, t metrics.Totals, schedule string) (Summary, error) {
	params := loop.Model().Params()
	mc := s.Train.Model
	sum := Summary{
		Dataset: in.name, Split: in.split, Model: mc.Model, Seed: mc.Seed,
		Features: "dense", Epochs: res.Epochs, StoppedEarly: res.StoppedEarly,
		BestEpoch: res.Best.Epoch, BestValAcc: res.Best.ValAcc, TestAcc: res.Best.TestAcc, TrainAcc: res.Best.TrainAcc,
		Metric: string(s.Train.Metric), BestValMacroF1: res.Best.ValF1, TestMacroF1: res.Best.TestF1,
		EpochMsMedian: 1000 * medianOrZero(res.EpochSeconds), StepMsMedian: 1000 * medianOrZero(res.StepSeconds),
		PeakRSSBytes: sysstat.PeakRSS(), Parameters: countParams(params), Leader: true,
		Parts: s.Parts, Compress: s.Codec, Schedule: schedule, Link: s.Link,
		BytesFwd: t.BytesFwd, BytesBwd: t.BytesBwd, BytesGrad: t.BytesGrad, BytesTotal: t.BytesTotal(),
		ComputeSeconds: t.ComputeSeconds, CommSeconds: t.CommSeconds, CodecSeconds: t.CodecSeconds, EmulatedSeconds: t.EmulatedSeconds,
		WorkerImbalance: t.WorkerImbalance(),
	}
	if sum.Metric == "" {
		sum.Metric = string(train.Accuracy)
	}
	if s.Train.SelectByLoss {
		sum.Metric = "loss"
	}
	if in.classes == 2 {
		sum.BestValAUC, sum.TestAUC = &res.Best.ValAUC, &res.Best.TestAUC
	}
	if s.Parts > 1 {
		sum.FloorEpoch = res.FloorEpoch
	}
	sum.Recipe, sum.Settings = s.Recipe, settingsOf(s)
	if sum.Compress == "" {
		sum.Compress = "none"
	}
	if sum.GradCompress = s.GradCompress; sum.GradCompress == "" {
		sum.GradCompress = "none"
	}
	if s.Sampler != "" {
		sum.Sampler, sum.BatchSize, sum.EvalSampler = s.Sampler, s.BatchSize, s.EvalSampler
		sum.EpochMsMedian = 1000 * medianOrZero(res.StepSeconds)
		sum.EvalMsMedian = 1000 * medianOrZero(res.EvalSeconds)
		if sum.EpochMsMedian > 0 {
			sum.EpochsPerSecond = 1000 / sum.EpochMsMedian
			sum.SeedsPerSecond = float64(len(in.problem.Train)) * sum.EpochsPerSecond
		}
	}
	if in.sparse {
		sum.Features = "sparse"
	}
	if s.Parts > 1 {
		sum.Partition = s.Partition
		var sizes []int64
		if in.layout != nil {
			for _, p := range in.layout.Parts {
				sizes = append(sizes, int64(len(p.Owned)))
			}
		}
		b, err := metrics.NewBalance(sizes, t.WorkerCompute)
		if err != nil {
			return Summary{}, err
		}
		sum.Balance = &b
	}
	if s.Save != "" {
		if err := s.saveModel(in, res, loop.Model()); err != nil {
			return Summary{}, err
		}
		sum.Saved = s.Save
	}
	return sum, nil
}

// medianOrZero is the median of xs, 0 for none (JSON has no NaN).
func medianOrZero(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

func countParams(ps []*nn.Param) int {
	n := 0
	for _, p := range ps {
		n += len(p.Value.Data)
	}
	return n
}
