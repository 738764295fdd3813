package dataparallel

import (
	"context"
	"fmt"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
)

// Options are the settings of a run beyond its training configuration.
type Options struct {
	// Sampler is the sampler's form (KIND:ARGS, any of package sample's,
	// each worker's batch); BatchSize the seeds per batch of each worker
	// for the seed-driven samplers.
	Sampler   string
	BatchSize int
	Link      *comm.Link // emulated network link, or nil
	// Codec and Schedule, when set, make the worker's compressor of the
	// training batches' feature rows and its ratio schedule (per epoch).
	Codec    func() compress.Compressor
	Schedule func() compress.Schedule
	// OnBatch, if set, is called on rank 0 after each batch with the
	// epoch, the batches of it done and its batches.
	OnBatch func(epoch, done, batches int)
	// Grad makes each worker's gradient compression (each needs its
	// own: it keeps state); nil all-reduces the gradients exactly.
	Grad func() (gradcomp.Method, error)
	// Precision bf16 holds the part's dense features in bfloat16 (sent
	// so, half the bytes, and widened where a batch gathers them) and rounds
	// the hidden layers exact evaluation computes to it, as one process's
	// mini-batch run at bf16 does.
	Precision train.Precision
	// OnSetup, if set, is called with the setup the workers agreed on
	// before the first epoch (Setup), before the part's features are
	// converted as it says.
	OnSetup func(Setup)

	Resume          *checkpoint.State
	SaveCheckpoint  func(*checkpoint.State) error // called on rank 0
	CheckpointEvery int
}

// RunWorker trains the part sp, which c's rank holds, with the other ranks
// of c doing the same with theirs, and calls onEpoch (on every rank) with
// the epoch's metrics over all workers. Parameters stay identical on every
// rank.
func RunWorker(ctx context.Context, c comm.Communicator, cfg train.Config, sp *partstore.Part, opts Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if opts.Link != nil {
		c = comm.WithLink(c, *opts.Link)
	}
	if sp.Classes > 0 && cfg.Model.Classes == 0 {
		cfg.Model.Classes = sp.Classes
	}
	// Every worker tells the others its part's figures, and all check that
	// they agree and decide alike from them whether sparse features
	// travel as dense rows.
	mine, err := partSetup(sp, cfg, opts)
	if err != nil {
		return train.Result{}, nil, err
	}
	su, err := agreeSetup(c, mine)
	if err != nil {
		return train.Result{}, nil, err
	}
	if opts.OnSetup != nil {
		opts.OnSetup(su)
	}
	if x := sp.Features.Sparse; su.DenseRows && x != nil {
		d := x.Dense()
		sp.Features = nn.DenseFeatures(d)
		memacct.Add(memacct.Features, 4*int64(len(d.Data)))
	}
	if x := sp.Features; opts.Precision == train.BF16 && x.Dense != nil {
		// The part's float32 features go once rounded: sp holds the bf16
		// ones instead. Sparse features stay as they are, as in one
		// process.
		rounded := tensor.MatrixToBF16(x.Dense)
		sp.Features = nn.BF16Features(rounded)
		memacct.Add(memacct.Features, rounded.Bytes())
	}
	s, err := New(c, cfg, sp, opts.Sampler, opts.BatchSize)
	if err != nil {
		return train.Result{}, nil, err
	}
	s.eval.bf16 = opts.Precision == train.BF16
	// A run that cannot evaluate says so before it trains.
	if err := s.eval.checkRoom(); err != nil {
		return train.Result{}, nil, err
	}
	if opts.Codec != nil {
		sched := compress.Schedule(compress.Fixed(1))
		if opts.Schedule != nil {
			sched = opts.Schedule()
		}
		if err := s.Compress(opts.Codec(), sched); err != nil {
			return train.Result{}, nil, err
		}
	}
	if c.Rank() == 0 {
		s.onBatch = opts.OnBatch
	}
	var reducer *train.CommReducer
	if c.Size() > 1 {
		reducer = &train.CommReducer{Comm: c}
		if opts.Grad != nil {
			if reducer.Grad, err = opts.Grad(); err != nil {
				return train.Result{}, nil, err
			}
		}
		cfg.Reducer = reducer
	}
	loop, err := train.New(cfg, s)
	if err != nil {
		return train.Result{}, nil, err
	}
	if opts.Resume != nil {
		if err := loop.Restore(opts.Resume); err != nil {
			return train.Result{}, nil, err
		}
	}
	hooks := train.Hooks{CheckpointEvery: opts.CheckpointEvery, AtFloor: s.AtFloor}
	switch {
	case c.Rank() == 0:
		hooks.SaveCheckpoint = opts.SaveCheckpoint
	case opts.SaveCheckpoint != nil: // the others take part in gathering the gradient compression's state
		hooks.SaveCheckpoint = func(*checkpoint.State) error { return nil }
	}
	var acc accounts
	hooks.OnEpoch = func(m train.Metrics) error {
		e, err := acc.epoch(m, c, reducer, s.TakeStats())
		if err != nil {
			return err
		}
		e.Ratio = s.Ratio()
		if onEpoch != nil {
			return onEpoch(e)
		}
		return nil
	}
	res, err := train.RunInGroup(ctx, loop, hooks, c)
	return res, loop, err
}

// Parts cuts the problem p into the parts of layout, as the workers
// holding them would read them from a part directory.
func Parts(p train.Problem, classes int, layout *partition.Layout) []*partstore.Part {
	src := partstore.Source{Graph: p.Graph, Features: p.Features, Labels: p.Labels, Classes: classes}
	src.Split.Train, src.Split.Val, src.Split.Test = p.Train, p.Val, p.Test
	fp := partstore.Fingerprint(layout)
	out := make([]*partstore.Part, layout.K)
	for i := range out {
		out[i] = partstore.Build(src, &layout.Parts[i], fp)
	}
	return out
}

// RunInProcess trains with one goroutine per part of layout, connected by
// an in-process comm.Group, and returns rank 0's result and loop.
func RunInProcess(ctx context.Context, cfg train.Config, p train.Problem, layout *partition.Layout, opts Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	parts := Parts(p, cfg.Model.Classes, layout)
	var res train.Result
	var loop *train.Loop
	err := comm.Run(layout.K, func(c comm.Communicator) error {
		var cb func(metrics.Epoch) error
		if c.Rank() == 0 {
			cb = onEpoch
		}
		sp := parts[c.Rank()]
		parts[c.Rank()] = nil // the worker's own, from here on
		r, l, err := RunWorker(ctx, c, cfg, sp, opts, cb)
		if c.Rank() == 0 {
			res, loop = r, l
		}
		return err
	})
	return res, loop, err
}

// accounts turns the loop's epochs into metrics.Epochs with every worker's
// communication: each worker's counters since the last epoch, gathered.
type accounts struct {
	prev    []float64
	elapsed float64
}

// counters: structure, feature, gradient and setup bytes sent,
// communication seconds, emulated seconds, wall seconds (these since the
// start, differenced per epoch), sample seconds, batches, input nodes,
// gather seconds, wait seconds, input edges (the epoch's).
const (
	nCounters   = 13
	nCumulative = 7
)

func (a *accounts) epoch(m train.Metrics, c comm.Communicator, reducer *train.CommReducer, st Stats) (metrics.Epoch, error) {
	a.elapsed += m.EpochSeconds
	now := make([]float64, nCounters)
	stats := c.Stats()
	for _, site := range stats.Sites() {
		ss := stats.Site(site)
		switch site {
		case train.CounterSite:
			continue
		case SetupSite:
			// Before the first epoch: its bytes are the setup's, its
			// time no epoch's.
			now[3] += float64(ss.BytesSent)
			continue
		case StructureSite:
			now[0] += float64(ss.BytesSent)
		case FeatureSite:
			now[1] += float64(ss.BytesSent)
		case train.GradientSite:
			now[2] += float64(ss.BytesSent)
		}
		now[4] += ss.Seconds
		now[5] += ss.EmulatedSeconds
	}
	now[6] = a.elapsed
	delta := make([]float64, nCounters)
	for i := range now {
		delta[i] = now[i]
		if a.prev != nil && i < nCumulative {
			delta[i] -= a.prev[i]
		}
	}
	a.prev = now
	delta[7], delta[8], delta[9], delta[10] = st.SampleSeconds, float64(st.Batches), float64(st.InputNodes), st.GatherSeconds
	delta[11], delta[12] = st.WaitSeconds, float64(st.InputEdges)
	all := [][]float64{delta}
	if reducer != nil {
		var err error
		if all, err = reducer.Gather(delta); err != nil {
			return metrics.Epoch{}, fmt.Errorf("dataparallel: exchanging epoch counters: %w", err)
		}
	}
	e := metrics.Epoch{Epoch: m.Epoch, Loss: m.Loss, TrainAcc: m.TrainAcc, ValAcc: m.ValAcc, TestAcc: m.TestAcc,
		ValF1: m.ValF1, TestF1: m.TestF1, ValAUC: m.ValAUC, TestAUC: m.TestAUC,
		ValLoss: m.ValLoss, EpochSeconds: m.EpochSeconds, StepSeconds: m.StepSeconds, Evaluated: m.Evaluated, EvalSeconds: m.EvalSeconds,
		Ratio: 1, WorkerCompute: make([]float64, len(all)), RSSBytes: metrics.ResidentBytes(), Batches: st.Batches}
	var inputs, edges, batches float64
	for r, v := range all {
		e.BytesStructure += int64(v[0])
		e.BytesFeatures += int64(v[1])
		e.BytesGrad += int64(v[2])
		e.BytesSetup += int64(v[3])
		compute := max(v[6]-v[4], 0)
		e.WorkerCompute[r] = compute
		e.ComputeSeconds = max(e.ComputeSeconds, compute)
		e.CommSeconds = max(e.CommSeconds, v[4])
		e.EmulatedCommSeconds = max(e.EmulatedCommSeconds, v[5])
		e.EmulatedSeconds = max(e.EmulatedSeconds, compute+v[5])
		e.SampleSeconds = max(e.SampleSeconds, v[7])
		e.GatherSeconds = max(e.GatherSeconds, v[10])
		e.WaitSeconds = max(e.WaitSeconds, v[11])
		batches += v[8]
		inputs += v[9]
		edges += v[12]
	}
	if batches > 0 {
		e.InputNodes, e.InputEdges = inputs/batches, edges/batches
	}
	return e, nil
}
