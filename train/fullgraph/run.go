package fullgraph

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/graft-gnn/graft/checkpoint"
	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/gradcomp"
	"github.com/graft-gnn/graft/halo"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
)

// Options are the settings of a run beyond its training configuration:
// compression and link emulation of the halo exchange, and checkpoints.
type Options struct {
	// Codec and Schedule make each worker's compressor of the halo
	// exchange and its ratio schedule (each worker needs its own: both
	// keep state); nil means no compression and ratio 1.
	Codec    func() compress.Compressor
	Schedule func() compress.Schedule
	// CompressLast compresses the last layer's exchange too
	// (halo.Config.CompressLast).
	CompressLast bool
	// EvalCodec makes each worker's compressor of the evaluation passes
	// (halo.Config.EvalCodec); nil sends them whole. The model selected
	// by those evaluations is evaluated once more, exactly, for the
	// result.
	EvalCodec func() compress.Compressor
	Link      *comm.Link // emulated network link, or nil
	// Grad makes each worker's gradient compression (each needs its
	// own: a method keeps residuals); nil sums gradients exactly.
	Grad func() (gradcomp.Method, error)

	// Resume continues from a checkpoint instead of a fresh start.
	Resume *checkpoint.State
	// SaveCheckpoint, if set, is called on rank 0 with the run's state every
	// CheckpointEvery epochs (when positive) and after an interrupted epoch.
	// In a run of several processes the other ranks set it too (to a
	// function that discards the state, with the same CheckpointEvery):
	// gradient compression and streaming codec (delta) state is gathered
	// from every worker when rank 0 saves.
	SaveCheckpoint  func(*checkpoint.State) error
	CheckpointEvery int

	// Rebalance, if set, re-partitions the graph during training when the
	// workers' compute time is imbalanced (RunWorker with a layout of two
	// parts or more, every worker holding the whole problem).
	Rebalance *Rebalance

	// Cut, if set, is called by each worker of a layout of two parts or
	// more once it has taken its part's rows from the whole problem,
	// unless it rebalances (which cuts anew from the whole): after every
	// worker's call, nothing of the run reads the whole problem's graph,
	// features or labels, and the caller may let them go.
	Cut func()

	// Precision is what the run holds its features and the layers'
	// per-node projections in, and what the halo exchange's forward rows
	// travel in (train.BF16: bfloat16; see nn.Model.SetBF16). Parameters,
	// optimiser state, gradients and reductions are float32 either way.
	Precision train.Precision

	layouts *sharedLayouts // the workers of RunInProcess build each new layout once
}

// RunWorker trains the part of layout that c's rank owns, with the other
// ranks of c doing the same, and calls onEpoch (on every rank) with the
// epoch's metrics over all workers. Bytes count what the workers sent
// during the training step's halo exchanges (forward activations, backward
// gradients) and gradient all-reduce; the evaluation passes' exchanges
// (compressed only with Options.EvalCodec) are counted apart, as BytesEval. Parameters stay identical on every rank, so any
// rank's model is the result. A nil or one-part layout is one worker
// holding the whole graph.
func RunWorker(ctx context.Context, c comm.Communicator, cfg train.Config, p train.Problem, layout *partition.Layout, opts Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	p, err := atPrecision(p, opts.Precision)
	if err != nil {
		return train.Result{}, nil, err
	}
	if opts.Link != nil {
		c = comm.WithLink(c, *opts.Link)
	}
	if layout == nil || layout.K == 1 {
		if opts.Rebalance != nil {
			return train.Result{}, nil, errors.New("fullgraph: rebalancing needs a layout of two parts or more")
		}
		if c.Size() != 1 {
			return train.Result{}, nil, fmt.Errorf("fullgraph: %d workers but no partition layout", c.Size())
		}
		d := Data{Block: nn.WholeGraph(p.Graph), Features: p.Features, Labels: p.Labels, Train: p.Train, Val: p.Val, Test: p.Test}
		return run(ctx, c, cfg, d, nil, opts, nil, onEpoch)
	}
	if layout.K != c.Size() {
		return train.Result{}, nil, fmt.Errorf("fullgraph: a %d-part layout needs %d workers, not %d", layout.K, layout.K, c.Size())
	}
	var records []Record
	if opts.Resume != nil {
		if layout, records, err = resumedLayout(p.Graph, layout, opts.Resume, opts.layouts); err != nil {
			return train.Result{}, nil, err
		}
	}
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		return train.Result{}, nil, err
	}
	hc := exchangeConfig(cfg, opts)
	part := &layout.Parts[c.Rank()]
	ex, err := halo.New(c, part, hc)
	if err != nil {
		return train.Result{}, nil, err
	}
	d, err := PartOf(p.Graph, p.Features, p.Labels, p.Train, p.Val, p.Test, part, agg, ex)
	if err != nil {
		return train.Result{}, nil, err
	}
	var rb *rebalancer
	if opts.Rebalance == nil {
		if opts.Cut != nil {
			opts.Cut()
		}
	} else {
		if rb, err = newRebalancer(*opts.Rebalance, c, p, hc, layout, records, opts.layouts); err != nil {
			return train.Result{}, nil, err
		}
		rb.last = cfg.Epochs
	}
	return run(ctx, c, cfg, d, ex, opts, rb, onEpoch)
}

// atPrecision returns p with its features as training at precision reads
// them: at bf16 dense features rounded to bf16 (or already bf16) in
// Features.BF16, sparse ones as they are; at fp32 bf16 features are an
// error.
func atPrecision(p train.Problem, precision train.Precision) (train.Problem, error) {
	if precision != train.BF16 {
		if p.FeaturesBF16 != nil || p.Features.BF16 != nil {
			return p, errors.New("fullgraph: the features are in bf16: train with --precision bf16")
		}
		return p, nil
	}
	if p.FeaturesBF16 == nil {
		p = p.WithBF16Features()
	}
	if p.FeaturesBF16 != nil {
		p.Features, p.FeaturesBF16 = nn.BF16Features(p.FeaturesBF16), nil
	}
	return p, nil
}

// RunInProcess trains with one goroutine per part of layout, connected by
// an in-process comm.Group, and returns rank 0's result and loop. A nil or
// one-part layout is plain single-process training.
func RunInProcess(ctx context.Context, cfg train.Config, p train.Problem, layout *partition.Layout, opts Options, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	if layout == nil || layout.K == 1 {
		return RunWorker(ctx, comm.NewGroup(1).Comm(0), cfg, p, nil, opts, onEpoch)
	}
	var res train.Result
	var loop *train.Loop
	opts.layouts = &sharedLayouts{}
	err := comm.Run(layout.K, func(c comm.Communicator) error {
		var cb func(metrics.Epoch) error
		o := opts
		if c.Rank() == 0 {
			cb = onEpoch
		} else if o.Rebalance != nil { // rank 0 reports
			rb := *o.Rebalance
			rb.Report, o.Rebalance = nil, &rb
		}
		r, l, err := RunWorker(ctx, c, cfg, p, layout, o, cb)
		if c.Rank() == 0 {
			res, loop = r, l
		}
		return err
	})
	return res, loop, err
}

// newExchange returns the halo exchange of the worker holding part.
func newExchange(c comm.Communicator, part *partition.Part, cfg train.Config, opts Options) (*halo.Exchange, error) {
	return halo.New(c, part, exchangeConfig(cfg, opts))
}

// exchangeConfig makes a worker's codec and schedule.
func exchangeConfig(cfg train.Config, opts Options) halo.Config {
	hc := halo.Config{Seed: cfg.Model.Seed, Layers: max(cfg.Model.Layers, 1), CompressLast: opts.CompressLast, BF16: opts.Precision == train.BF16}
	if opts.Codec != nil {
		hc.Codec = opts.Codec()
	}
	if opts.Schedule != nil {
		hc.Schedule = opts.Schedule()
	}
	if opts.EvalCodec != nil {
		hc.EvalCodec = opts.EvalCodec()
	}
	return hc
}

// run trains d, this rank's share, through ex (nil for one worker), as
// RunWorker describes, re-partitioning with rb (nil: never).
func run(ctx context.Context, c comm.Communicator, cfg train.Config, d Data, ex *halo.Exchange, opts Options, rb *rebalancer, onEpoch func(metrics.Epoch) error) (train.Result, *train.Loop, error) {
	var reducer *train.CommReducer
	if c.Size() > 1 {
		reducer = &train.CommReducer{Comm: c}
		if opts.Grad != nil {
			var err error
			if reducer.Grad, err = opts.Grad(); err != nil {
				return train.Result{}, nil, err
			}
		}
		cfg.Reducer = reducer
	}
	s, err := NewStepper(cfg, d, ex)
	if err != nil {
		return train.Result{}, nil, err
	}
	defer func() {
		if s.ex != nil { // the exchange in force at the end (rebalancing closes the others)
			s.ex.Close()
		}
	}()
	s.model.SetBF16(opts.Precision == train.BF16)
	s.model.SetProducts(opts.Precision.Products())
	loop, err := train.New(cfg, s)
	if err != nil {
		return train.Result{}, nil, err
	}
	if opts.Resume != nil {
		if err := loop.Restore(opts.Resume); err != nil {
			return train.Result{}, nil, err
		}
	}
	hooks := train.Hooks{CheckpointEvery: opts.CheckpointEvery}
	switch {
	case c.Rank() == 0:
		hooks.SaveCheckpoint = opts.SaveCheckpoint
	case opts.SaveCheckpoint != nil: // the others take part in gathering the compression state
		hooks.SaveCheckpoint = func(*checkpoint.State) error { return nil }
	}
	if ex != nil { // the exchange in force: a re-partition replaces it
		hooks.Observe = func(loss float64) { s.ex.Observe(loss) }
		hooks.AtFloor = func() bool { return s.ex.AtFloor() }
	}
	var acc epochAccounts
	resave := rb.keepSaving(&hooks, loop)
	hooks.OnEpoch = func(m train.Metrics) error {
		e, err := acc.epoch(m, c, s.ex, reducer)
		if err != nil {
			return err
		}
		if onEpoch != nil {
			if err := onEpoch(e); err != nil {
				return err
			}
		}
		return rb.afterEpoch(m.Epoch, e.WorkerCompute, s, &acc, resave)
	}
	res, err := train.RunInGroup(ctx, loop, hooks, c)
	if err == nil && s.ex != nil && s.ex.EvalCompressed() && res.Best.Epoch > 0 {
		res.Best, err = evaluateExactly(loop, s.ex, res.Best)
	}
	return res, loop, err
}

// evaluateExactly is best with its evaluation redone with whole halo rows:
// the loop holds best's parameters, selected by evaluations through
// halo.Config.EvalCodec, and the run reports them as they are.
func evaluateExactly(loop *train.Loop, ex *halo.Exchange, best train.Metrics) (train.Metrics, error) {
	ex.EvaluateExactly(true)
	defer ex.EvaluateExactly(false)
	m, err := loop.Evaluate()
	if err != nil {
		return best, fmt.Errorf("fullgraph: evaluating the kept model exactly: %w", err)
	}
	best.TrainAcc, best.ValAcc, best.TestAcc, best.ValLoss = m.TrainAcc, m.ValAcc, m.TestAcc, m.ValLoss
	best.ValF1, best.TestF1, best.ValAUC, best.TestAUC = m.ValF1, m.TestF1, m.ValAUC, m.TestAUC
	best.ValAUCUndefined, best.TestAUCUndefined = m.ValAUCUndefined, m.TestAUCUndefined
	return best, nil
}

// counters are one worker's cumulative figures, exchanged after every
// epoch.
type counters struct {
	BytesFwd, BytesBwd, BytesGrad float64
	BytesEval                     float64
	CommSeconds, EmulatedSeconds  float64
	CodecSeconds, WallSeconds     float64
}

func (w counters) values() []float64 {
	return []float64{w.BytesFwd, w.BytesBwd, w.BytesGrad, w.BytesEval, w.CommSeconds, w.EmulatedSeconds, w.CodecSeconds, w.WallSeconds}
}

func countersOf(v []float64) counters {
	return counters{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
}

// read takes this worker's counters from its communicator's statistics and
// its exchange (nil for one worker).
func read(stats *comm.Stats, ex *halo.Exchange, wall, codecBefore float64) counters {
	w := counters{WallSeconds: wall}
	for _, site := range stats.Sites() {
		st := stats.Site(site)
		switch {
		case site == train.CounterSite:
			continue
		case strings.HasPrefix(site, halo.ForwardSites):
			w.BytesFwd += float64(st.BytesSent)
		case strings.HasPrefix(site, halo.BackwardSites):
			w.BytesBwd += float64(st.BytesSent)
		case strings.HasPrefix(site, halo.EvalSites):
			w.BytesEval += float64(st.BytesSent)
		case site == train.GradientSite:
			w.BytesGrad += float64(st.BytesSent)
		}
		w.CommSeconds += st.Seconds
		w.EmulatedSeconds += st.EmulatedSeconds
	}
	w.CodecSeconds = codecBefore
	if ex != nil {
		w.CodecSeconds += ex.CodecSeconds()
	}
	return w
}

// epochAccounts turns the loop's epochs into metrics.Epochs with every
// worker's communication.
type epochAccounts struct {
	prev    []float64 // this worker's counters after the last epoch
	elapsed float64
	// codecBefore is the codec time of the exchanges that re-partitions
	// replaced.
	codecBefore float64
}

// skip leaves what was sent and waited for since the last epoch (a
// re-partition's) out of the next epoch's figures.
func (a *epochAccounts) skip(c comm.Communicator, ex *halo.Exchange) {
	a.prev = read(c.Stats(), ex, a.elapsed, a.codecBefore).values()
}

func (a *epochAccounts) epoch(m train.Metrics, c comm.Communicator, ex *halo.Exchange, reducer *train.CommReducer) (metrics.Epoch, error) {
	a.elapsed += m.EpochSeconds
	now := read(c.Stats(), ex, a.elapsed, a.codecBefore).values()
	delta := make([]float64, len(now))
	for i := range now {
		delta[i] = now[i]
		if a.prev != nil {
			delta[i] -= a.prev[i]
		}
	}
	a.prev = now
	all := [][]float64{delta}
	if reducer != nil {
		var err error
		if all, err = reducer.Gather(delta); err != nil {
			return metrics.Epoch{}, fmt.Errorf("fullgraph: exchanging epoch counters: %w", err)
		}
	}
	e := metrics.Epoch{Epoch: m.Epoch, Loss: m.Loss, TrainAcc: m.TrainAcc, ValAcc: m.ValAcc, TestAcc: m.TestAcc,
		ValF1: m.ValF1, TestF1: m.TestF1, ValAUC: m.ValAUC, TestAUC: m.TestAUC,
		ValLoss: m.ValLoss, EpochSeconds: m.EpochSeconds, StepSeconds: m.StepSeconds, Evaluated: m.Evaluated,
		Ratio: 1, WorkerCompute: make([]float64, len(all)), RSSBytes: metrics.ResidentBytes()}
	if ex != nil {
		e.Ratio = ex.TrainingRatio()
	}
	for r, v := range all {
		w := countersOf(v)
		e.BytesFwd += int64(w.BytesFwd)
		e.BytesBwd += int64(w.BytesBwd)
		e.BytesGrad += int64(w.BytesGrad)
		e.BytesEval += int64(w.BytesEval)
		compute := max(w.WallSeconds-w.CommSeconds, 0)
		e.WorkerCompute[r] = compute
		e.ComputeSeconds = max(e.ComputeSeconds, compute)
		e.CommSeconds = max(e.CommSeconds, w.CommSeconds)
		e.EmulatedCommSeconds = max(e.EmulatedCommSeconds, w.EmulatedSeconds)
		e.EmulatedSeconds = max(e.EmulatedSeconds, compute+w.EmulatedSeconds)
		e.CodecSeconds = max(e.CodecSeconds, w.CodecSeconds)
	}
	return e, nil
}
