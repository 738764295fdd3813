package job

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/async"
	"github.com/graft-gnn/graft/train/minibatch"
)

// AsyncSpec is a parameter-server run: Workers workers train on their
// shares of the training seeds with the Spec's sampler, and Servers servers
// hold the parameters (see train/async).
type AsyncSpec struct {
	Workers, Servers int
	// Rule is a staleness rule (async.ParseRule); MaxStaleness drops
	// gradients staler than it, negative for no bound.
	Rule         string
	MaxStaleness int
	// PerUpdate gradients make one update (async.Settings.PerUpdate);
	// 0 or 1: each gradient is one.
	PerUpdate int
	// Sync runs the synchronous baseline on the same servers.
	Sync bool
	// Timeout bounds every wait for a peer (0: async.DefaultTimeout).
	Timeout time.Duration
	// SlowWorker's steps take SlowFactor times their compute time.
	SlowWorker int
	SlowFactor float64
}

// checkAsync checks a parameter-server run's settings that need no data.
func (s *Spec) checkAsync() error {
	a := s.Async
	if a == nil {
		return nil
	}
	mode := "--mode async"
	if a.Sync {
		mode = "--mode ps-sync"
	}
	switch {
	case s.Sampler == "":
		return errors.New("--mode async trains on sampled mini-batches: add --sampler")
	case s.PartDir != "" || (s.Parts > 1 && s.Place.Size <= 1):
		return errors.New("--mode async gives every worker the whole graph: drop --parts and --part-dir (--workers sets the workers)")
	case s.Place.Size > 1 && s.Place.Size != a.Workers+a.Servers:
		return fmt.Errorf("--mode async with --workers %d and --servers %d needs %d processes, one per rank; the job has %d", a.Workers, a.Servers, a.Workers+a.Servers, s.Place.Size)
	case s.CheckpointDir != "" || s.Resume != "":
		return errors.New("--mode async does not checkpoint: drop --checkpoint-dir and --resume")
	case s.BatchSize < 1:
		return fmt.Errorf("--batch-size %d: want at least 1", s.BatchSize)
	case a.Workers < 1 || a.Servers < 1:
		return fmt.Errorf("--workers %d and --servers %d: want at least 1 each", a.Workers, a.Servers)
	case a.SlowFactor > 1 && (a.SlowWorker < 0 || a.SlowWorker >= a.Workers):
		return fmt.Errorf("--slow-worker %d: there are workers 0 to %d", a.SlowWorker, a.Workers-1)
	case s.Train.Accumulate > 1 && a.Sync:
		return fmt.Errorf("--accumulate %d with %s: every gradient a worker pushes to the servers is one batch's, and each step the servers average one from every worker: drop it", s.Train.Accumulate, mode)
	case s.Train.Accumulate > 1:
		return fmt.Errorf("--accumulate %d with %s: every gradient a worker pushes to the servers is one batch's; --grads-per-update K averages K of them an update: drop it", s.Train.Accumulate, mode)
	case s.GradCompress != "" && s.GradCompress != "none":
		return fmt.Errorf("--grad-compress %s with %s: the workers push their gradients to the parameter servers whole; it compresses the gradients summed over the parts of --mode sync (--parts N): drop it", s.GradCompress, mode)
	case s.Codec != "" && s.Codec != "none":
		return fmt.Errorf("--compress %s with %s: every worker holds the whole graph, so no halo or feature rows cross between workers to compress: drop it", s.Codec, mode)
	case s.Schedule != "":
		return fmt.Errorf("--schedule %s with %s: it sets the ratio of --compress, and no halo or feature rows cross between the workers: drop it", s.Schedule, mode)
	case s.CompressLast:
		return fmt.Errorf("--compress-last with %s: it compresses the last layer's halo exchange, and no halo rows cross between the workers: drop it", mode)
	}
	return nil
}

// runAsync trains with a parameter server in this process.
func (s *Spec) runAsync(ctx context.Context, in *input, onEpoch func(metrics.Epoch) error) (train.Result, *nn.Model, error) {
	a := s.Async
	if a.Workers > len(in.problem.Train) {
		return train.Result{}, nil, specError(fmt.Errorf("--workers %d: the split has %d training nodes, and every worker trains on a share of them; use at most %d workers", a.Workers, len(in.problem.Train), len(in.problem.Train)))
	}
	// Ranks are workers and servers, not parts of the graph.
	s.Parts = 1
	rule, err := async.ParseRule(a.Rule)
	if err != nil {
		return train.Result{}, nil, specError(fmt.Errorf("--staleness-rule: %v", err))
	}
	cfg := s.Train
	cfg.Model = cfg.Model.WithDefaults()
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return train.Result{}, nil, err
	}
	var (
		mu       sync.Mutex // workers build their steppers at once
		steppers []*minibatch.Stepper
	)
	precision := train.Precision(s.Precision)
	if precision == train.BF16 {
		// The float32 features go once converted: the workers read
		// these, and nothing else reads the float32 ones.
		in.problem = in.problem.WithBF16Features()
	}
	defer func() {
		for _, st := range steppers {
			st.Close()
		}
	}()
	opts := async.Options{Workers: a.Workers, Servers: a.Servers, Rule: rule, MaxStaleness: a.MaxStaleness, PerUpdate: a.PerUpdate, Sync: a.Sync,
		Timeout: a.Timeout, SlowWorker: a.SlowWorker, SlowFactor: a.SlowFactor,
		NewStepper: func(w int) (train.Stepper, error) {
			p := in.problem
			sm, err := sample.New(s.Sampler, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: s.BatchSize,
				Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed, Share: w, Shares: a.Workers})
			if err != nil {
				return nil, err
			}
			mo := minibatch.Options{EvalSampler: s.EvalSampler, EvalBatchSize: s.BatchSize, Precision: precision}
			if w == 0 {
				mo.OnBatch = s.BatchProgress
			}
			st, err := minibatch.New(cfg, p, sm, mo)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			steppers = append(steppers, st)
			mu.Unlock()
			return st, nil
		}}
	var r async.Result
	if s.Place.Size > 1 {
		r, err = s.runAsyncRank(ctx, cfg, in, opts, onEpoch)
	} else {
		r, err = async.Run(ctx, cfg, in.problem, opts, onEpoch)
	}
	if se := (sample.SpecError{}); errors.As(err, &se) {
		err = specError(fmt.Errorf("--sampler: %v", err))
	}
	if err != nil {
		return train.Result{}, nil, err
	}
	s.async = &r
	if c := r.Counters; c.Updates == 0 && s.Place.Rank == 0 {
		// Gradients summed toward an update when the run ends are not
		// applied: the model is then its initialisation, which the
		// accuracies alone do not tell. Each server counts its share of
		// every gradient, so the sums over servers count each gradient
		// once per server.
		n := int64(a.Servers)
		fmt.Fprintf(s.Log, "graft train: the servers applied no update: %d gradients were kept and %d dropped for staleness, and an update takes %d (--grads-per-update); the model is as initialised\n",
			c.Pushes/n, c.Dropped/n, max(opts.PerUpdate, 1))
	}
	return train.Result{Epochs: r.Epochs, Best: r.Best, StoppedEarly: r.StoppedEarly, FloorEpoch: 1, EpochSeconds: r.EpochSeconds, StepSeconds: r.StepSeconds, EvalSeconds: r.EvalSeconds}, r.Model, nil
}

// runAsyncRank runs this process's rank of a multi-process job: workers
// first, then servers, as the launcher numbers the processes.
func (s *Spec) runAsyncRank(ctx context.Context, cfg train.Config, in *input, opts async.Options, onEpoch func(metrics.Epoch) error) (async.Result, error) {
	if s.Launch == nil {
		return async.Result{}, specError(errors.New("a rank of a multi-process job needs its launch settings"))
	}
	logger := log.New(s.Log, "", log.LstdFlags)
	c, err := s.Launch.Connect(ctx, os.Getenv, logger.Printf)
	if err != nil {
		return async.Result{}, err
	}
	defer c.Close()
	if c.Rank() != 0 {
		onEpoch = nil
	}
	r, err := async.RunRank(ctx, c, cfg, in.problem, opts, onEpoch)
	if err == nil {
		// Every rank is done with the others before any closes.
		err = c.Barrier("async.done")
	}
	if err != nil {
		c.Abort(err)
		err = lostPeer(err, c, r.Epochs)
	}
	return r, err
}

// summariseAsync adds a parameter-server run's figures to the summary.
func (s *Spec) summariseAsync(sum *Summary) {
	a, r := s.Async, s.async
	if a == nil || r == nil {
		return
	}
	sum.Mode, sum.Workers, sum.Servers = "async", a.Workers, a.Servers
	if a.Sync {
		sum.Mode = "ps-sync"
	} else {
		rule, _ := async.ParseRule(a.Rule)
		sum.StalenessRule = rule.String()
		if bound := a.MaxStaleness; bound >= 0 {
			sum.MaxStaleness = &bound
		}
		if a.PerUpdate > 1 {
			sum.GradsPerUpdate = a.PerUpdate
		}
	}
	h := &r.Counters.Staleness
	sum.StalenessMean, sum.StalenessP50, sum.StalenessP99, sum.StalenessMax = h.Mean(), h.Quantile(0.5), h.Quantile(0.99), h.Max()
	sum.DroppedUpdates = r.Counters.Dropped
	sum.TrainSeconds = r.Seconds
	if r.Seconds > 0 {
		sum.UpdatesPerSecond = float64(r.Counters.Updates) / float64(a.Servers) / r.Seconds
	}
}
