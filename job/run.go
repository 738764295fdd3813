package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/stats"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/dataparallel"
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
	if err := s.checkRun(); err != nil {
		return Summary{}, err
	}
	// Rank 0 writes the metrics file; every worker serves its own
	// Prometheus endpoint, so that a stalled or lost one shows;
	// it serves graft_epoch 0 while the data loads.
	sinks, err := s.metricSinks(leader)
	if err != nil {
		return Summary{}, err
	}
	rec := metrics.NewRecorder(sinks...)
	defer rec.Close()
	start := time.Now()
	in, err := s.load()
	if err != nil {
		return Summary{}, err
	}
	defer in.release()
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
	if opts.Rebalance, err = s.rebalancing(leader); err != nil {
		return Summary{}, err
	}
	if s.RecipeNote != "" && leader {
		fmt.Fprintln(s.Log, s.RecipeNote)
	}
	if note := s.unusedWithOneWorker(); note != "" && leader {
		fmt.Fprintf(s.Log, "graft train: %s\n", note)
	}
	if err := s.checkpoints(&opts, in, schedule, multi); err != nil {
		return Summary{}, err
	}
	chance := s.chanceWatch(in, leader)
	onEpoch := func(e metrics.Epoch) error {
		if s.Progress != nil {
			s.Progress(e)
		}
		chance.observe(e)
		return rec.Record(e)
	}
	var res train.Result
	var loop *train.Loop
	var model *nn.Model
	in.startMapped()
	switch {
	case s.Async != nil:
		res, model, err = s.runAsync(ctx, in, onEpoch)
	case s.Pipeline != nil:
		res, model, err = s.runPipeline(ctx, in, onEpoch)
	case s.Sampler != "" && s.Parts > 1:
		err = s.checkDataParallel()
		if err == nil && multi {
			res, loop, err = s.runWorker(ctx, in, opts, onEpoch)
		} else if err == nil {
			res, loop, err = s.runInProcess(ctx, in, opts, onEpoch)
		}
	case s.Sampler != "":
		res, loop, err = s.runMiniBatch(ctx, in, opts, onEpoch)
	case multi:
		res, loop, err = s.runWorker(ctx, in, opts, onEpoch)
	default:
		res, loop, err = s.runInProcess(ctx, in, opts, onEpoch)
	}
	if err != nil {
		return Summary{}, s.explain(err)
	}
	mapped := in.endMapped()
	if !leader {
		return Summary{}, nil
	}
	if s.Parts > 1 && res.FloorEpoch == 0 {
		fmt.Fprintf(s.Log, "graft train: the compression schedule %s had not reached its final ratio by the last epoch (%d); the kept epoch was trained at a higher ratio (raise --epochs, or give a schedule that ends sooner)\n", schedule, res.Epochs)
	}
	if loop != nil {
		model = loop.Model()
	}
	sum, err := s.summarise(in, res, model, rec.Totals(), schedule)
	sum.FeaturesMapped = mapped
	return sum, err
}

// checkRun checks the settings that need no data.
func (s *Spec) checkRun() error {
	if s.Parts < 0 {
		return specError(fmt.Errorf("--parts %d: want at least 1", s.Parts))
	}
	if s.CheckpointEvery < 0 {
		return specError(fmt.Errorf("--checkpoint-every %d: want 0 or more", s.CheckpointEvery))
	}
	if _, err := nn.ParseLayout(s.SaveFormat); err != nil {
		return specError(fmt.Errorf("--save-format: %v", err))
	}
	precision, err := train.ParsePrecision(s.Precision)
	if err != nil {
		return specError(fmt.Errorf("--%v", err))
	}
	if err := s.checkPipeline(); err != nil {
		return specError(err)
	}
	s.Precision = string(precision)
	if err := s.checkRebalance(); err != nil {
		return err
	}
	if err := s.checkAsync(); err != nil {
		return specError(err)
	}
	if err := s.checkForms(); err != nil {
		return err
	}
	return s.CheckOutputs()
}

// explain adds to a training error what the user can do about it.
func (s *Spec) explain(err error) error {
	switch {
	case errors.Is(err, train.ErrNotFinite):
		return fmt.Errorf("%v; lower the learning rate with --lr, or check the features for extreme values", err)
	case errors.Is(err, train.ErrInterrupted) && s.Pipeline != nil:
		return fmt.Errorf("%v; nothing was saved (--mode pipeline does not checkpoint)", err)
	case errors.Is(err, train.ErrInterrupted):
		if s.CheckpointDir != "" {
			return fmt.Errorf("%v; its checkpoint is in %s: continue with --resume %s", err, s.CheckpointDir, s.CheckpointDir)
		}
		return fmt.Errorf("%v; nothing was saved (use --checkpoint-dir to keep interrupted runs)", err)
	}
	return err
}

// roundFeatures rounds the problem's dense features to bf16 once for a
// bf16 run over parts in this process (full-graph or data-parallel) and
// lets the float32 matrix go: nothing after this reads it (the
// checkpoints' data identity is already taken). Every worker's copy of its
// rows is then in bf16 too.
func (s *Spec) roundFeatures(in *input) {
	if s.Precision == string(train.BF16) && (s.Sampler == "" || s.Parts > 1) {
		in.problem = in.problem.WithBF16Features()
	}
}

// runInProcess trains every part in this process: one goroutine each.
func (s *Spec) runInProcess(ctx context.Context, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	s.roundFeatures(in)
	if in.manifest == nil && s.Sampler == "" {
		if in.layout != nil && in.layout.K > 1 {
			opts.Cut = func() { in.fullPartCut(in.layout.K) }
		}
		return fullgraph.RunInProcess(ctx, s.Train, in.problem, in.layout, opts, onEpoch)
	}
	// Every part is read in this process, so the directory must hold them
	// all before a rank starts: a manifest saying 100000 parts started a
	// group of as many ranks, whose memory grows with the square of it,
	// and crashed before the first missing part was noticed.
	for i := 0; in.manifest != nil && i < in.manifest.Parts; i++ {
		if _, err := os.Stat(partstore.Dir(s.PartDir, i)); err != nil {
			return train.Result{}, nil, fmt.Errorf("--part-dir %s: manifest.json says %d parts, but part %d is missing: %w", s.PartDir, in.manifest.Parts, i, err)
		}
	}
	var res train.Result
	var loop *train.Loop
	err := comm.Run(s.Parts, func(c comm.Communicator) error {
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
	if s.BatchSize < 1 {
		return train.Result{}, nil, specError(fmt.Errorf("--batch-size %d: want at least 1", s.BatchSize))
	}
	mo := minibatch.RunOptions{Sampler: s.Sampler, BatchSize: s.BatchSize,
		Options: minibatch.Options{OnBatch: s.BatchProgress, EvalSampler: s.EvalSampler, Precision: train.Precision(s.Precision)},
		Resume:  opts.Resume, SaveCheckpoint: opts.SaveCheckpoint, CheckpointEvery: opts.CheckpointEvery}
	p := in.problem
	if mo.Precision == train.BF16 {
		// The float32 features go once converted: nothing after this
		// reads them (the checkpoints' data identity is already taken).
		p = p.WithBF16Features()
		in.problem.Features, in.problem.FeaturesBF16 = p.Features, p.FeaturesBF16
	}
	res, loop, err := minibatch.Run(ctx, s.Train, p, mo, onEpoch)
	if se := (sample.SpecError{}); errors.As(err, &se) {
		err = specError(fmt.Errorf("--sampler: %v", err))
	}
	return res, loop, err
}

// checkDataParallel checks the settings of sampled training over parts.
func (s *Spec) checkDataParallel() error {
	if s.BatchSize < 1 {
		return specError(fmt.Errorf("--batch-size %d: want at least 1", s.BatchSize))
	}
	if _, err := sample.ParsePartSpec(s.Sampler, s.Train.Model.WithDefaults().Layers); err != nil {
		return specError(fmt.Errorf("--sampler with --parts %d: %v", s.Parts, err))
	}
	switch {
	case s.EvalSampler != "":
		return specError(fmt.Errorf("--eval-sampler with --parts %d: evaluation over parts is exact layer-wise inference; drop --eval-sampler", s.Parts))
	case s.Schedule != "":
		sched, err := compress.ParseSchedule(s.Schedule, s.Train.Epochs)
		if _, adaptive := sched.(compress.Observer); err == nil && adaptive {
			return specError(fmt.Errorf("--schedule %s adapts to the validation loss, which sampled training over parts does not report to it; give a schedule of the epoch", s.Schedule))
		}
	}
	return nil
}

// runRank trains rank c.Rank()'s part.
func (s *Spec) runRank(ctx context.Context, c comm.Communicator, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if s.Sampler != "" {
		return s.runSampledRank(ctx, c, in, opts, onEpoch)
	}
	if in.manifest == nil {
		return fullgraph.RunWorker(ctx, c, s.Train, in.problem, in.layout, opts, onEpoch)
	}
	sp, err := in.manifest.ReadPart(s.PartDir, c.Rank())
	if err != nil {
		return train.Result{}, nil, err
	}
	in.holdPart(sp, true)
	return fullgraph.RunStoredWorker(ctx, c, s.Train, sp, opts, onEpoch)
}

// runSampledRank trains rank c.Rank()'s part on sampled mini-batches,
// holding that part only.
func (s *Spec) runSampledRank(ctx context.Context, c comm.Communicator, in *input, opts fullgraph.Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	var sp *partstore.Part
	if in.manifest != nil {
		var err error
		if sp, err = in.manifest.ReadPart(s.PartDir, c.Rank()); err != nil {
			return train.Result{}, nil, err
		}
		in.holdPart(sp, true)
	} else {
		p := in.problem
		src := partstore.Source{Graph: p.Graph, Features: p.Features, Labels: p.Labels, Classes: in.classes}
		if p.FeaturesBF16 != nil { // rounded by roundFeatures
			src.Features = nn.BF16Features(p.FeaturesBF16)
		}
		src.Split.Train, src.Split.Val, src.Split.Test = p.Train, p.Val, p.Test
		sp = partstore.Build(src, &in.layout.Parts[c.Rank()], partstore.Fingerprint(in.layout))
		in.holdPart(sp, false)
		if s.Place.Size > 1 {
			in.dropAllBut(c.Rank())
		} else {
			in.partCut(s.Parts)
		}
	}
	do := dataparallel.Options{Sampler: s.Sampler, BatchSize: s.BatchSize, Link: opts.Link, Schedule: opts.Schedule, OnBatch: s.BatchProgress,
		Resume: opts.Resume, SaveCheckpoint: opts.SaveCheckpoint, CheckpointEvery: opts.CheckpointEvery, Grad: opts.Grad,
		Precision: train.Precision(s.Precision)}
	if s.Codec != "" && s.Codec != "none" {
		do.Codec = opts.Codec
		if x := sp.Features.Sparse; x != nil && c.Rank() == 0 && dataparallel.SendsFeatures(s.Sampler) {
			do.OnSetup = func(su dataparallel.Setup) {
				if !su.DenseRows { // the workers hold the sparse rows as they are
					fmt.Fprintf(s.Log, "graft train: --compress %s codes feature rows dense, %d bytes a row before coding; without it these sparse rows travel as their entries, %.0f bytes a row on average\n",
						s.Codec, 4*x.Cols, dataparallel.SparseRowBytes(x))
				}
			}
		}
	}
	return dataparallel.RunWorker(ctx, c, s.Train, sp, do, onEpoch)
}

// dropAllBut lets go of the whole problem once the worker of a
// multi-process job has cut its part from it (dropWhole), and of the other
// parts' structure.
func (in *input) dropAllBut(rank int) {
	in.dropWhole()
	for i := range in.layout.Parts {
		if i != rank {
			part := &in.layout.Parts[i]
			part.Local, part.Halo, part.Send = nil, nil, nil
		}
	}
}

// partCut is called by each of the parts ranks of one process once it has
// cut its part from the whole problem: the last lets go of the whole
// problem (dropWhole), so that the features are not held twice, as the
// parts' rows and as the whole's. The parts keep their structure, which
// they share with in.layout.
func (in *input) partCut(parts int) {
	if atomic.AddInt64(&in.cut, 1) == int64(parts) {
		in.dropWhole()
	}
}

// fullPartCut is partCut for full-graph parts (fullgraph.Options.Cut),
// which copy their rows without holdPart: when the last has cut its part,
// the account counts the whole's feature bytes, what the parts' rows add
// up to, as the parts'.
func (in *input) fullPartCut(parts int) {
	if atomic.AddInt64(&in.cut, 1) == int64(parts) {
		rows := featureBytes(in.problem.Features)
		if x := in.problem.FeaturesBF16; x != nil {
			rows += x.Bytes()
		}
		atomic.AddInt64(&in.partFeatures, rows)
		in.dropWhole()
	}
}

// dropWhole lets go of the whole problem's graph, features and labels.
// What the summary and the saved model's metadata read stays: the node
// count, the split and the parts' sizes.
func (in *input) dropWhole() {
	p := &in.problem
	p.Graph = &graph.Graph{N: p.Graph.N}
	p.Features, p.FeaturesBF16, p.WillRead, p.Labels = nn.Features{}, nil, nil, nil
}

// metricSinks opens the metrics file (on the leader) and the Prometheus
// endpoint.
func (s *Spec) metricSinks(leader bool) ([]metrics.Sink, error) {
	var sinks []metrics.Sink
	switch {
	case s.MetricsFile == "" || !leader:
	case s.Resume != "":
		// A resume continues the file of the run it resumes, as a
		// restarted job (graft launch --max-restarts) does.
		sinks = append(sinks, metrics.ContinueEpochs(s.MetricsFile))
	default:
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
func (s *Spec) summarise(in *input, res train.Result, model *nn.Model, t metrics.Totals, schedule string) (Summary, error) {
	params := model.Params()
	mc := s.Train.Model
	sum := Summary{
		Dataset: in.name, Split: in.split, Model: mc.Model, Seed: mc.Seed,
		Features: "dense", Epochs: res.Epochs, StoppedEarly: res.StoppedEarly,
		BestEpoch: res.Best.Epoch, BestValAcc: res.Best.ValAcc, TestAcc: res.Best.TestAcc, TrainAcc: res.Best.TrainAcc,
		Metric: string(s.Train.Metric), BestValMacroF1: res.Best.ValF1, TestMacroF1: res.Best.TestF1,
		EpochMsMedian: 1000 * medianOrZero(res.EpochSeconds), StepMsMedian: 1000 * medianOrZero(res.StepSeconds),
		PeakRSSBytes: sysstat.PeakRSS(), Parameters: countParams(params), Leader: true,
		Precision: s.Precision, Parts: s.Parts, Compress: s.Codec, Schedule: schedule, Link: s.Link,
		BytesFwd: t.BytesFwd, BytesBwd: t.BytesBwd, BytesGrad: t.BytesGrad, BytesTotal: t.BytesTotal(), BytesEval: t.BytesEval, EvalCompress: s.evalCodecInUse(),
		BytesStructure: t.BytesStructure, BytesFeatures: t.BytesFeatures, BytesSetup: t.BytesSetup, BytesParams: t.BytesParams,
		ComputeSeconds: t.ComputeSeconds, CommSeconds: t.CommSeconds, CodecSeconds: t.CodecSeconds, EmulatedSeconds: t.EmulatedSeconds,
		WorkerImbalance: t.WorkerImbalance(),
	}
	mem := s.memoryAccount(in, model, sum.PeakRSSBytes)
	sum.Memory = &mem
	if sum.Metric == "" {
		sum.Metric = string(train.Accuracy)
	}
	if s.Train.SelectByLoss {
		sum.Metric = "loss"
	}
	if in.classes == 2 {
		s.summariseAUC(&sum, res.Best)
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
	s.summariseAsync(&sum)
	if s.Rebalance != 0 {
		sum.Rebalances = &s.rebalances
	}
	s.summarisePipeline(&sum)
	if s.Parts > 1 {
		sum.Partition = s.Partition
		b, err := metrics.NewBalance(s.partSizes(in), t.WorkerCompute)
		if err != nil {
			return Summary{}, err
		}
		sum.Balance = &b
	}
	if s.Save != "" {
		if err := s.saveModel(in, res, model); err != nil {
			return Summary{}, err
		}
		sum.Saved = s.Save
	}
	return sum, nil
}

// summariseAUC puts the kept epoch's ROC-AUC of a binary task in the
// summary, leaving out (as JSON leaves out every value a run does not
// have) a set's that is undefined, and says so once on the log.
func (s *Spec) summariseAUC(sum *Summary, best train.Metrics) {
	var undefined, fields []string
	if best.ValAUCUndefined {
		undefined, fields = append(undefined, "validation"), append(fields, "best_val_auc")
	} else {
		sum.BestValAUC = &best.ValAUC
	}
	if best.TestAUCUndefined {
		undefined, fields = append(undefined, "test"), append(fields, "test_auc")
	} else {
		sum.TestAUC = &best.TestAUC
	}
	switch len(undefined) {
	case 1:
		fmt.Fprintf(s.Log, "graft train: the %s set does not hold nodes of both classes: its ROC-AUC is undefined, and the summary leaves it out (%s)\n", undefined[0], fields[0])
	case 2:
		fmt.Fprintf(s.Log, "graft train: neither the validation nor the test set holds nodes of both classes: their ROC-AUC is undefined, and the summary leaves it out (best_val_auc, test_auc)\n")
	}
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
