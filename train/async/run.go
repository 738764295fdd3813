package async

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/train"
)

// Options are the settings of a parameter-server run beyond its training
// configuration.
type Options struct {
	Workers, Servers int
	Rule             Rule
	// MaxStaleness drops gradients staler than it; negative keeps all.
	MaxStaleness int
	// PerUpdate gradients make one update (Settings.PerUpdate); 0 or 1:
	// each gradient is one.
	PerUpdate int
	// Sync runs the synchronous baseline instead: every server waits for
	// a gradient from every worker and applies their mean.
	Sync bool
	// Timeout bounds every wait for a peer (default 2 minutes): a dead or
	// stalled rank is an error naming it within it.
	Timeout time.Duration
	// SlowWorker's steps take SlowFactor times their compute time (a
	// factor of 1 or less slows nothing).
	SlowWorker int
	SlowFactor float64
	// NewStepper returns worker w's stepper. Its sampler should draw each
	// epoch's batches from worker w's share of that epoch's order of all
	// the training nodes (sample.Config's Share and Shares, w of Workers),
	// so that every gradient pushed is of a uniform draw from them.
	NewStepper func(w int) (train.Stepper, error)
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 2 * time.Minute

// Result summarises a run: Best is the epoch (of worker 0's evaluations)
// that model selection kept, and Model, worker 0's model, holds its
// parameters.
type Result struct {
	Epochs int
	Best   train.Metrics
	// StoppedEarly: patience ran out before the last epoch.
	StoppedEarly bool
	// EpochSeconds, StepSeconds and EvalSeconds are worker 0's: each
	// epoch's wall time, its training part, and each evaluation.
	EpochSeconds, StepSeconds, EvalSeconds []float64
	Model                                  *nn.Model
	Seconds                                float64 // wall time of the whole run
	// Final is worker 0's parameters after its last step, concatenated
	// in the model's order; Counters the servers' figures over the run,
	// summed over the shards (each push counts once per shard).
	Final    []float32
	Counters Counters
}

// Run trains in this process: opts.Workers worker ranks (0…N−1) and
// opts.Servers server ranks (N…N+S−1) of one comm.Group, each running
// RunRank, talking through point-to-point messages exactly as over a
// network. Result is worker 0's, with every server's counters.
func Run(ctx context.Context, cfg train.Config, p train.Problem, opts Options, onEpoch func(metrics.Epoch) error) (Result, error) {
	if err := opts.check(cfg); err != nil {
		return Result{}, err
	}
	results := make([]Result, opts.Workers+opts.Servers)
	start := time.Now()
	err := comm.Run(len(results), func(c comm.Communicator) error {
		var err error
		results[c.Rank()], err = RunRank(ctx, c, cfg, p, opts, onEpoch)
		return err
	})
	res := results[0]
	res.Seconds = time.Since(start).Seconds()
	res.Counters = Counters{}
	for _, r := range results[opts.Workers:] {
		res.Counters.add(r.Counters)
	}
	return res, err
}

// RunRank runs rank c.Rank()'s part of a parameter-server run whose ranks
// are opts.Workers workers (0…N−1) then opts.Servers servers: a worker
// trains with opts.NewStepper's stepper, and a
// server builds the model as the workers do (same seed, same values) and
// serves its shard. Worker 0 reports to onEpoch.
//
// An epoch is as many gradients as all workers' batches of an epoch,
// whichever workers computed them: the servers stop the workers once
// cfg.Epochs epochs of gradients are in, so fast workers do the share of a
// slow one. Worker 0 evaluates the parameters it last received when an
// epoch's gradients are in (every cfg.EvalEvery epochs), the last epoch
// once every server has said stop (with the parameters the run ends
// with), and reports the epoch with the servers' staleness and byte
// figures since the last report.
// Model selection and patience are those of every other mode (train.Loop):
// when patience runs out, worker 0 tells the servers, which answer every
// later push with stop; Result.Model holds the selected epoch's
// parameters.
// Worker 0 reports the last epoch once every worker is done, with the
// servers' final counters, so that the epochs count every push; its
// Counters are those, summed (after an error, those at its last report);
// the other workers' Result has the epochs complete as the servers last
// told them; a server's Result holds only its own Counters.
func RunRank(ctx context.Context, c comm.Communicator, cfg train.Config, p train.Problem, opts Options, onEpoch func(metrics.Epoch) error) (Result, error) {
	if err := opts.check(cfg); err != nil {
		return Result{}, err
	}
	n, s, r := opts.Workers, opts.Servers, c.Rank()
	if c.Size() != n+s {
		return Result{}, fmt.Errorf("async: %d ranks for %d workers and %d servers", c.Size(), n, s)
	}
	workers, servers := make([]int, n), make([]int, s)
	for w := range n {
		workers[w] = w
	}
	for k := range s {
		servers[k] = n + k
	}
	var (
		model   *nn.Model
		stepper train.Stepper
		err     error
	)
	if r < n {
		if stepper, err = opts.NewStepper(r); err != nil {
			return Result{}, err
		}
		model = stepper.Model()
		// Dropout is keyed by the model's step: apart per worker.
		model.SetStep(uint64(r) << 40)
	} else if model, err = train.NewModel(cfg, p.FeatureCols()); err != nil {
		return Result{}, err
	}
	params := model.Params()
	sizes := make([]int, len(params))
	for i, q := range params {
		sizes[i] = len(q.Value.Data)
	}
	plan := Plan(sizes, s)
	if r >= n {
		var values [][]float32
		var decays []float64
		for _, i := range plan[r-n] {
			values, decays = append(values, params[i].Value.Data), append(decays, params[i].WeightDecay)
		}
		sh, err := NewShard(Settings{Optimizer: cfg.Optimizer, Rule: opts.Rule, MaxStaleness: opts.MaxStaleness, PerUpdate: opts.PerUpdate}, values, decays)
		if err != nil {
			return Result{}, err
		}
		cn, err := Serve(c, sh, ServerConfig{Workers: workers, Timeout: opts.Timeout, Sync: opts.Sync, Epochs: cfg.Epochs, SendFinal: true})
		return Result{Counters: cn}, err
	}
	wc := WorkerConfig{Servers: servers, Plan: plan, Timeout: opts.Timeout}
	if r == opts.SlowWorker {
		wc.Slow = opts.SlowFactor
	}
	var rep *reporter
	seen := 0 // the epochs complete, as the servers' last answer said
	wc.OnStep = func(d StepDone) error {
		if d.EpochSize > 0 {
			seen = min(int(d.Pushes/d.EpochSize), cfg.Epochs)
		}
		return nil
	}
	if r == 0 {
		// Evaluations go through a loop of their own, which the worker
		// never steps: it turns the stepper's sums into every metric.
		evalCfg := cfg
		evalCfg.Reducer = nil
		evalLoop, err := train.New(evalCfg, stepper)
		if err != nil {
			return Result{}, err
		}
		rep = &reporter{cfg: cfg, opts: opts, stepper: stepper, eval: evalLoop, servers: servers, onEpoch: onEpoch, ctx: ctx, c: c, last: time.Now()}
		wc.OnStep = rep.step
	}
	train.Began(ctx, 1) // an asynchronous run does not resume
	start := time.Now()
	err = Work(c, stepper, wc)
	if rep != nil {
		err = rep.finish(err)
	}
	res := Result{Model: model, Seconds: time.Since(start).Seconds(), Epochs: seen}
	for _, q := range params {
		res.Final = append(res.Final, q.Value.Data...)
	}
	if rep != nil {
		res.Epochs, res.Best, res.EpochSeconds, res.StepSeconds, res.EvalSeconds = rep.epochs, rep.eval.Best(), rep.seconds, rep.steps, rep.evals
		res.Counters, res.StoppedEarly = rep.prev, rep.stopped
		if res.Best.Epoch > 0 {
			rep.eval.RestoreBest()
		}
	}
	return res, err
}

func (o *Options) check(cfg train.Config) error {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.Workers < 1 || o.Servers < 1:
		return fmt.Errorf("async: %d workers and %d servers; want at least one of each", o.Workers, o.Servers)
	case cfg.Epochs < 1:
		return fmt.Errorf("async: %d epochs; want at least 1", cfg.Epochs)
	case cfg.Accumulate > 1:
		return errors.New("async: gradient accumulation is not supported: each push is one batch's gradient")
	case cfg.Steps > 0:
		return errors.New("async: a step limit is not supported: workers stop after their epochs")
	case o.NewStepper == nil:
		return errors.New("async: no stepper")
	case o.PerUpdate < 0:
		return fmt.Errorf("async: %d gradients an update; want 1 or more", o.PerUpdate)
	case o.Sync && o.PerUpdate > 1:
		return errors.New("async: the synchronous servers apply every worker's gradient as one update already: several gradients an update is for asynchronous runs")
	}
	return nil
}

// reporter is worker 0's record of the run's epochs.
type reporter struct {
	ctx       context.Context
	cfg       train.Config
	opts      Options
	c         comm.Communicator
	stepper   train.Stepper
	eval      *train.Loop
	servers   []int
	onEpoch   func(metrics.Epoch) error
	last      time.Time // the end of the last report
	prev      Counters
	epochSize int64   // gradients of all workers in an epoch, as the servers last said
	lossSum   float64 // worker 0's steps since the last report
	lossSteps int
	stepSecs  float64
	epochs    int
	seconds   []float64
	steps     []float64
	evals     []float64
	metrics   train.Metrics // the last evaluation
	stopped   bool          // patience ran out: the servers were told to stop
	held      *heldEpoch    // the last epoch's record, until finish
}

// step notes worker 0's step, and reports an epoch once the servers have
// received an epoch's gradients from all workers together (or the run's
// last). When worker 0 lags so much that several epochs' gradients came in
// since its last step, only the latest epoch is reported.
func (r *reporter) step(d StepDone) error {
	if r.stopped {
		return nil
	}
	if d.EpochSize > 0 {
		r.epochSize = d.EpochSize
	}
	r.lossSum += d.Loss
	r.lossSteps++
	r.stepSecs += d.Seconds
	epoch := 0
	if r.epochSize > 0 { // the last epoch waits for the stop (epoch)
		epoch = min(int(d.Pushes/r.epochSize), r.cfg.Epochs-1)
	}
	if d.Stop { // every server has the run's gradients
		epoch = r.cfg.Epochs
	}
	if epoch <= r.epochs {
		if err := r.ctx.Err(); err != nil {
			return fmt.Errorf("%w in epoch %d: %v", train.ErrInterrupted, r.epochs+1, err)
		}
		return nil
	}
	reported, err := r.epoch(r.lossSum/float64(r.lossSteps), r.stepSecs, d.Stop)
	if reported {
		r.lossSum, r.lossSteps, r.stepSecs = 0, 0, 0
	}
	return err
}

// epoch evaluates (when due) and reports the latest epoch whose gradients
// the servers' counters show in, or the last one once every server said
// stop (final); loss is worker 0's mean over its steps since the last
// report, stepSeconds their time. It reports nothing when no epoch has
// come in since the last report. The last epoch waits for the stop even
// when the counters show it in (and no epoch is reported in its place):
// only then does worker 0 hold the parameters the run ends with, which
// the last epoch evaluates (when worker 0 lags, those it last received
// can be epochs older).
func (r *reporter) epoch(loss, stepSeconds float64, final bool) (bool, error) {
	now := time.Now()
	cn, err := Stats(r.c, r.servers, r.opts.Timeout)
	if err != nil {
		return false, err
	}
	epoch := r.cfg.Epochs // the servers said stop: the last epoch is in
	if !final {
		if cn.EpochSize == 0 { // not every worker has said how many batches it has
			return false, nil
		}
		if epoch = int(cn.Pushes / int64(len(r.servers)) / cn.EpochSize); epoch >= r.cfg.Epochs {
			return false, nil // the last epoch: the stop comes with the next answers
		}
	}
	if epoch <= r.epochs {
		return false, nil
	}
	if err := r.ctx.Err(); err != nil {
		return false, fmt.Errorf("%w after epoch %d: %v", train.ErrInterrupted, epoch, err)
	}
	wall := now.Sub(r.last).Seconds()
	before := r.prev
	r.prev = cn
	m := r.metrics
	m.EvalSeconds = 0
	// Due when a multiple of EvalEvery was reached since the last report:
	// a lagging worker 0 may report several epochs at once.
	every := max(r.cfg.EvalEvery, 1)
	m.Evaluated = epoch/every > r.epochs/every || epoch == r.cfg.Epochs
	if m.Evaluated {
		if m, err = r.evaluate(); err != nil {
			return false, err
		}
		m.Evaluated = true
		m.EvalSeconds = time.Since(now).Seconds()
		r.metrics = m
	}
	m.Epoch, m.Loss, m.StepSeconds = epoch, loss, stepSeconds
	m.EpochSeconds = time.Since(r.last).Seconds()
	// Model selection and patience as in every other mode (worker 0's
	// model holds the parameters it evaluated), but never stopping a run
	// before it has an evaluated epoch to keep.
	if r.eval.Observe(m) && r.eval.Best().Epoch > 0 && epoch < r.cfg.Epochs {
		if err := r.stop(); err != nil {
			return false, err
		}
	}
	r.last = time.Now()
	r.epochs = epoch
	r.seconds = append(r.seconds, m.EpochSeconds)
	r.steps = append(r.steps, m.StepSeconds)
	if m.Evaluated {
		r.evals = append(r.evals, m.EvalSeconds)
	}
	e := metrics.Epoch{Epoch: m.Epoch, Loss: m.Loss, TrainAcc: m.TrainAcc, ValAcc: m.ValAcc, TestAcc: m.TestAcc, ValLoss: m.ValLoss,
		ValF1: m.ValF1, TestF1: m.TestF1, ValAUC: m.ValAUC, TestAUC: m.TestAUC,
		EpochSeconds: m.EpochSeconds, StepSeconds: m.StepSeconds, Evaluated: m.Evaluated, EvalSeconds: m.EvalSeconds, Ratio: 1,
		RSSBytes: metrics.ResidentBytes(), Batches: r.stepper.Batches()}
	if r.stopped || epoch == r.cfg.Epochs {
		// The run's last report waits for the servers' final counters
		// (finish).
		r.held = &heldEpoch{e: e, before: before, wall: wall}
		return true, nil
	}
	return true, r.emit(e, cn.since(before), wall)
}

// evaluate evaluates worker 0's model. An exact evaluation of a large
// graph can outlast the servers' timeout, and the servers wait for worker
// 0 meanwhile (all of them once the other workers are done, and in a
// synchronous run the other workers too), so worker 0 tells every server
// it is alive (kindAlive) a few times a timeout while it evaluates: a dead
// worker 0 still goes silent.
func (r *reporter) evaluate() (train.Metrics, error) {
	done := make(chan struct{})
	alive := make(chan struct{})
	go func() {
		defer close(alive)
		tick := time.NewTicker(max(r.opts.Timeout/4, time.Millisecond))
		defer tick.Stop()
		msg := request{kind: kindAlive}.encode()
		failed := make([]bool, len(r.servers)) // the worker's own next exchange names the failure
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				for k, sv := range r.servers {
					failed[k] = failed[k] || r.c.Send(RequestSite, sv, msg) != nil
				}
			}
		}
	}()
	defer func() {
		close(done)
		<-alive
	}()
	return r.eval.Evaluate()
}

// heldEpoch is the run's last epoch record, waiting for the servers'
// final counters: before are the counters at the report before it, wall
// the seconds since that report.
type heldEpoch struct {
	e      metrics.Epoch
	before Counters
	wall   float64
}

// emit reports e with the servers' figures over its interval.
func (r *reporter) emit(e metrics.Epoch, interval Counters, wall float64) error {
	if r.onEpoch == nil {
		return nil
	}
	h := &interval.Staleness
	e.StalenessMean, e.StalenessP50, e.StalenessP99, e.StalenessMax = h.Mean(), h.Quantile(0.5), h.Quantile(0.99), h.Max()
	e.DroppedUpdates, e.BytesGrad, e.BytesParams = interval.Dropped, interval.BytesGrad, interval.BytesParams
	if wall > 0 {
		e.UpdatesPerSecond = float64(interval.Updates) / float64(len(r.servers)) / wall
	}
	return r.onEpoch(e)
}

// finish reports the run's last epoch, held since its report, with the
// servers' figures up to their final counters, which they send once every
// worker is done: the pushes that came after the report (the steps in
// flight when the run stopped, answered with stop, and a lagging server's
// last gradients) count in the last epoch, and the epochs' bytes add up to
// every byte pushed and sent back. After workErr, Work's error, or when
// the final counters do not come, it reports the figures as they were at
// the report, and returns that error.
func (r *reporter) finish(workErr error) error {
	h := r.held
	if h == nil {
		return workErr
	}
	r.held = nil
	if workErr == nil {
		final, err := Final(r.c, r.servers, r.opts.Timeout)
		if err == nil {
			r.prev = final
		}
		workErr = err
	}
	err := r.emit(h.e, r.prev.since(h.before), h.wall)
	if workErr != nil {
		return workErr
	}
	return err
}

// stop tells every server that the run ends now: patience ran out. Each
// answers every later push with stop, so the workers finish their steps in
// flight and end.
func (r *reporter) stop() error {
	r.stopped = true
	msg := request{kind: kindStop}.encode()
	for _, sv := range r.servers {
		if err := r.c.Send(RequestSite, sv, msg); err != nil {
			return fmt.Errorf("async: telling server rank %d to stop: %w", sv, err)
		}
	}
	return nil
}
