package async

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

// testConfig is the small model the package's tests train.
func testConfig(model string) train.Config { return traintest.Config(model, 2, 3) }

const testSampler, testBatch = "neighbor:5,5", 16

// stepperFactory builds each of workers' mini-batch steppers, each
// drawing its batches from its share of every epoch's order of the seeds.
func stepperFactory(t testing.TB, cfg train.Config, p train.Problem, workers int) func(w int) (train.Stepper, error) {
	return func(w int) (train.Stepper, error) {
		q := p
		agg, err := sample.AggregationOf(cfg.Model.Model)
		if err != nil {
			return nil, err
		}
		sm, err := sample.New(testSampler, sample.Config{Graph: q.Graph, Train: q.Train, BatchSize: testBatch,
			Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed, Share: w, Shares: workers})
		if err != nil {
			return nil, err
		}
		st, err := minibatch.New(cfg, q, sm, minibatch.Options{})
		if err == nil {
			t.Cleanup(st.Close)
		}
		return st, err
	}
}

// shareLen is the number of seeds in worker w's share of n seeds among
// workers.
func shareLen(n, w, workers int) int { return (n - w + workers - 1) / workers }

// One worker with a rule that scales nothing trains exactly as the
// single-process loop: same batches, same updates, the same bits, whether
// the parameters sit on one server or are spread over two.
func TestOneWorkerEqualsSingleProcessTraining(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	st, err := stepperFactory(t, cfg, p, 1)(0)
	if err != nil {
		t.Fatal(err)
	}
	loop, err := train.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	var wantLoss []float64
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		var sum float64
		for b := range st.Batches() {
			loss, err := loop.Step(epoch, b)
			if err != nil {
				t.Fatal(err)
			}
			sum += loss
		}
		wantLoss = append(wantLoss, sum/float64(st.Batches()))
	}
	var want []float32
	for _, q := range loop.Model().Params() {
		want = append(want, q.Value.Data...)
	}
	for _, servers := range []int{1, 2} {
		var losses []float64
		res, err := Run(context.Background(), cfg, p, Options{Workers: 1, Servers: servers, MaxStaleness: -1, NewStepper: stepperFactory(t, cfg, p, 1)},
			func(e metrics.Epoch) error { losses = append(losses, e.Loss); return nil })
		if err != nil {
			t.Fatal(err)
		}
		for i := range wantLoss {
			if losses[i] != wantLoss[i] {
				t.Fatalf("%d servers: epoch %d loss %v, single process %v", servers, i+1, losses[i], wantLoss[i])
			}
		}
		if len(res.Final) != len(want) {
			t.Fatalf("%d values, want %d", len(res.Final), len(want))
		}
		for i := range want {
			if res.Final[i] != want[i] {
				t.Fatalf("%d servers: parameter value %d = %v, single process %v", servers, i, res.Final[i], want[i])
			}
		}
		if c := res.Counters; c.Staleness.Max() != 0 || c.Dropped != 0 || c.Updates != int64(servers*cfg.Epochs*st.Batches()) {
			t.Fatalf("%d servers: counters %+v; want every update fresh", servers, c)
		}
	}
}

// Four workers push concurrently: every gradient is counted once per
// shard, applied or dropped, and the epochs report staleness.
func TestFourWorkersCountEveryGradient(t *testing.T) {
	p := traintest.SBMProblem(t, 400)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Optimizer.LR = 6, 0.03
	for _, tc := range []struct {
		name      string
		sync      bool
		maxStale  int
		rule      string
		perUpdate int
	}{{"async", false, 2, "inverse", 1}, {"sync", true, -1, "none", 1}, {"k-batch-sync", false, -1, "drop", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			rule, _ := ParseRule(tc.rule)
			var epochs []metrics.Epoch
			newStepper := stepperFactory(t, cfg, p, 4)
			if !tc.sync && tc.perUpdate == 1 {
				newStepper = firstGradientStale(newStepper)
			}
			opts := Options{Workers: 4, Servers: 2, Rule: rule, MaxStaleness: tc.maxStale, PerUpdate: tc.perUpdate, Sync: tc.sync, Timeout: 30 * time.Second,
				SlowWorker: 3, SlowFactor: 2, NewStepper: newStepper}
			res, err := Run(context.Background(), cfg, p, opts, func(e metrics.Epoch) error { epochs = append(epochs, e); return nil })
			if err != nil {
				t.Fatal(err)
			}
			budget := int64(0) // an epoch's gradients: every worker's batches
			for w := range 4 {
				budget += int64(cfg.Epochs * ((shareLen(len(p.Train), w, 4) + testBatch - 1) / testBatch))
			}
			c := res.Counters
			if tc.sync {
				// One update per step of all workers, never stale.
				if c.Staleness.Max() != 0 || c.Dropped != 0 || c.Updates < 2*budget/4 || c.Updates > 2*(budget/4+1) {
					t.Fatalf("budget %d: counters %+v", budget, c)
				}
			} else if k := int64(tc.perUpdate); kept(c) != 2*budget || kept(c) < k*c.Updates || kept(c)-k*c.Updates > 2*(k-1) || c.Pushes != kept(c) {
				// The epochs are of gradients kept, not of those dropped;
				// each server makes an update of every k gradients it
				// keeps, and up to k − 1 may be left over on each at the
				// end.
				t.Fatalf("a budget of %d gradients on 2 servers, %d an update: %d counted, %d updates, %d dropped, %d pushes", budget, k, c.Staleness.Count(), c.Updates, c.Dropped, c.Pushes)
			}
			if !tc.sync && tc.perUpdate == 1 && c.Staleness.Max() == 0 {
				t.Fatalf("four workers and not one stale gradient: %+v", c)
			}
			// Worker 0 reports each epoch it sees complete, the last always.
			if len(epochs) == 0 || len(epochs) > cfg.Epochs || epochs[len(epochs)-1].Epoch != cfg.Epochs || res.Epochs != cfg.Epochs {
				t.Fatalf("%d epoch records, the last %+v", len(epochs), epochs[len(epochs)-1])
			}
			for i := 1; i < len(epochs); i++ {
				if epochs[i].Epoch <= epochs[i-1].Epoch {
					t.Fatalf("epoch %d reported after epoch %d", epochs[i].Epoch, epochs[i-1].Epoch)
				}
			}
			var dropped int64
			for _, e := range epochs {
				dropped += e.DroppedUpdates
				if e.UpdatesPerSecond <= 0 || e.ValAcc <= 0 || float64(e.StalenessMax) < e.StalenessMean || e.StalenessP99 > e.StalenessMax || e.StalenessP50 > e.StalenessP99 {
					t.Fatalf("epoch %+v", e)
				}
			}
			if dropped > c.Dropped {
				t.Fatalf("epochs report %d dropped, the servers %d", dropped, c.Dropped)
			}
			t.Logf("best validation accuracy %.3f, %d updates, %d dropped, staleness mean %.2f max %d", res.Best.ValAcc, c.Updates, c.Dropped, c.Staleness.Mean(), c.Staleness.Max())
			if res.Best.ValAcc < 0.5 {
				t.Fatalf("best validation accuracy %v on a 4-class SBM", res.Best.ValAcc)
			}
		})
	}
}

// firstGradientStale makes worker 1 push its first gradient, computed
// from the first parameters, once worker 0's first has been applied, and
// the other workers wait for it after their first: that gradient is stale
// and counted however the machine schedules the workers, which on a
// loaded machine may otherwise run one at a time (asynchronous servers,
// one gradient an update).
func firstGradientStale(newStepper func(w int) (train.Stepper, error)) func(w int) (train.Stepper, error) {
	applied, pushed := make(chan struct{}), make(chan struct{})
	wait := func(c chan struct{}, what string) error {
		select {
		case <-c:
			return nil
		case <-time.After(30 * time.Second):
			return fmt.Errorf("%s not within 30s", what)
		}
	}
	return func(w int) (train.Stepper, error) {
		st, err := newStepper(w)
		if err != nil {
			return st, err
		}
		return &hookedStepper{Stepper: st, hook: func(step int) error {
			switch {
			case w == 1 && step == 0:
				return wait(applied, "worker 0's first gradient applied")
			case w == 1 && step == 1: // its first push is answered
				close(pushed)
			case step == 1: // the worker's first push is answered
				if w == 0 {
					close(applied)
				}
				return wait(pushed, "worker 1's first gradient pushed")
			}
			return nil
		}}, nil
	}
}

// kept is the gradients the servers kept: every one counted but those
// dropped.
func kept(c Counters) int64 { return c.Staleness.Count() - c.Dropped }

// A server that stalls, dies or finishes early is an error on the worker
// naming it, within the timeout; a worker that stalls is one on the server.
func TestDeadOrStalledPeerIsNamed(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	cfg := testConfig("sage")
	const timeout = 300 * time.Millisecond
	cases := []struct {
		name   string
		server func(c comm.Communicator) error
		want   string
	}{
		{"stalled", func(c comm.Communicator) error {
			_, _, err := c.Recv("never", comm.AnyRank, time.Time{}) // until the worker gives up
			return err
		}, "server rank 1 did not answer within 300ms"},
		{"died", func(c comm.Communicator) error { return errors.New("out of memory") }, "rank 1: out of memory"},
		{"finished", func(c comm.Communicator) error { return nil }, "comm: rank 1: closed its communicator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			start := time.Now()
			comm.Run(2, func(c comm.Communicator) error {
				if c.Rank() == 1 {
					return tc.server(c)
				}
				st, err := stepperFactory(t, cfg, p, 1)(0)
				if err != nil {
					return err
				}
				got = Work(c, st, WorkerConfig{Servers: []int{1}, Plan: Plan(paramSizes(st), 1), Epochs: 1, Timeout: timeout})
				return got
			})
			if got == nil || !strings.Contains(got.Error(), tc.want) || !strings.Contains(got.Error(), "worker rank 0") {
				t.Fatalf("worker: %v; want an error of worker rank 0 with %q", got, tc.want)
			}
			if d := time.Since(start); d > timeout+2*time.Second {
				t.Fatalf("the worker gave up after %v", d)
			}
		})
	}
	t.Run("stalled worker", func(t *testing.T) {
		var got error
		comm.Run(2, func(c comm.Communicator) error {
			if c.Rank() == 0 {
				_, _, err := c.Recv("never", comm.AnyRank, time.Time{})
				return err
			}
			sh, err := NewShard(Settings{Optimizer: cfg.Optimizer}, [][]float32{{1}}, []float64{0})
			if err != nil {
				return err
			}
			_, got = Serve(c, sh, ServerConfig{Workers: []int{0}, Timeout: timeout})
			return got
		})
		if got == nil || !strings.Contains(got.Error(), "server rank 1: workers [0] did not start within 300ms") {
			t.Fatalf("server: %v", got)
		}
	})
}

func paramSizes(s train.Stepper) []int {
	var sizes []int
	for _, q := range s.Model().Params() {
		sizes = append(sizes, len(q.Value.Data))
	}
	return sizes
}

// Workers start together: the server answers the first pulls once every
// worker has asked, or has said it is done without starting (it failed), so
// the others do not wait for it.
func TestWorkersStartTogether(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	cfg := testConfig("sage")
	err := comm.Run(3, func(c comm.Communicator) error {
		switch c.Rank() {
		case 1:
			return c.Send(RequestSite, 2, request{kind: kindDone}.encode())
		case 2:
			sh, err := NewShard(Settings{Optimizer: cfg.Optimizer, MaxStaleness: -1}, [][]float32{{0}}, []float64{0})
			if err != nil {
				return err
			}
			_, err = Serve(c, sh, ServerConfig{Workers: []int{0, 1}, Timeout: 5 * time.Second})
			return err
		}
		st, err := stepperFactory(t, cfg, p, 1)(0)
		if err != nil {
			return err
		}
		// One parameter of one value: a model whose first parameter is
		// larger gets an error, which shows the server answered.
		err = Work(c, st, WorkerConfig{Servers: []int{2}, Plan: [][]int{{0}}, Epochs: 1, Timeout: 5 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "sent 1 values for a shard of more") {
			return fmt.Errorf("worker 0: %v; want the server's answer, too short for the model", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A server whose counters come in another version of their format (a
// different graft) is an error naming the server and both versions, not
// garbage in the epoch's report.
func TestStatsRefusesCountersOfAnotherVersion(t *testing.T) {
	err := comm.Run(2, func(c comm.Communicator) error {
		if c.Rank() == 1 { // the server, a build whose counters are version 2
			if _, _, err := c.Recv(RequestSite, 0, time.Now().Add(10*time.Second)); err != nil {
				return err
			}
			b := encodeCounters(Counters{Updates: 3})
			b[0] = 2
			return c.Send(ReplySite, 0, b)
		}
		_, err := Stats(c, []int{1}, 10*time.Second)
		if want := "from server rank 1: async: counters of format version 2; this build reads version 4"; err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("Stats: %v; want %q", err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Patience and model selection are the single-process loop's: one worker
// stops at the epoch the loop stops at, having selected the same epoch by
// the validation loss, and ends with that epoch's parameters.
func TestPatienceStopsAsTheLoopDoes(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Patience, cfg.SelectByLoss = 80, 3, true
	st, err := stepperFactory(t, cfg, p, 1)(0)
	if err != nil {
		t.Fatal(err)
	}
	loop, err := train.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	want, err := loop.Run(context.Background(), train.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !want.StoppedEarly {
		t.Fatalf("the loop ran all %d epochs: the test needs a run that patience stops", want.Epochs)
	}
	var wantParams []float32
	for _, q := range loop.Model().Params() {
		wantParams = append(wantParams, q.Value.Data...)
	}
	var reported int
	res, err := Run(context.Background(), cfg, p, Options{Workers: 1, Servers: 2, MaxStaleness: -1, NewStepper: stepperFactory(t, cfg, p, 1)},
		func(e metrics.Epoch) error { reported = e.Epoch; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !res.StoppedEarly || res.Epochs != want.Epochs || reported != want.Epochs || res.Best.Epoch != want.Best.Epoch || res.Best.ValLoss != want.Best.ValLoss {
		t.Fatalf("async: stopped early %v after epoch %d (last reported %d), best epoch %d (val loss %v); the loop: after epoch %d, best %d (%v)",
			res.StoppedEarly, res.Epochs, reported, res.Best.Epoch, res.Best.ValLoss, want.Epochs, want.Best.Epoch, want.Best.ValLoss)
	}
	var got []float32
	for _, q := range res.Model.Params() {
		got = append(got, q.Value.Data...)
	}
	for i := range wantParams {
		if got[i] != wantParams[i] {
			t.Fatalf("parameter value %d = %v, the loop's selected %v", i, got[i], wantParams[i])
		}
	}
}

// With four workers, asynchronous and synchronous, patience ends the run
// early without a hang: the servers answer every push after worker 0's
// stop with stop, including pushes a synchronous server holds.
func TestPatienceStopsFourWorkers(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Patience, cfg.SelectByLoss = 200, 2, true
	for _, sync := range []bool{false, true} {
		res, err := Run(context.Background(), cfg, p, Options{Workers: 4, Servers: 2, MaxStaleness: -1, Sync: sync,
			Timeout: 30 * time.Second, NewStepper: stepperFactory(t, cfg, p, 4)}, nil)
		if err != nil {
			t.Fatalf("sync %v: %v", sync, err)
		}
		if !res.StoppedEarly || res.Epochs >= cfg.Epochs || res.Best.Epoch == 0 || res.Epochs-res.Best.Epoch < cfg.Patience {
			t.Fatalf("sync %v: stopped early %v after epoch %d of %d, best epoch %d, patience %d", sync, res.StoppedEarly, res.Epochs, cfg.Epochs, res.Best.Epoch, cfg.Patience)
		}
	}
}

// A worker 0 that lags reports several epochs at once; evaluations every
// few epochs still happen whenever a multiple was passed, and patience
// never ends a run before it has an evaluated epoch to keep.
func TestPatienceWithALaggingWorkerZero(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Patience, cfg.EvalEvery, cfg.SelectByLoss = 200, 4, 3, true
	for _, factor := range []float64{3, 12} {
		evaluated := 0
		res, err := Run(context.Background(), cfg, p, Options{Workers: 6, Servers: 1, MaxStaleness: -1, SlowWorker: 0, SlowFactor: factor,
			Timeout: 30 * time.Second, NewStepper: stepperFactory(t, cfg, p, 6)}, func(e metrics.Epoch) error {
			if e.EvalSeconds > 0 {
				evaluated++
			}
			return nil
		})
		if err != nil {
			t.Fatalf("worker 0 slowed %v×: %v", factor, err)
		}
		if res.Best.Epoch == 0 || evaluated == 0 || len(res.EvalSeconds) != evaluated {
			t.Fatalf("worker 0 slowed %v×: best epoch %d after %d epochs, %d evaluations reported, %d timed", factor, res.Best.Epoch, res.Epochs, evaluated, len(res.EvalSeconds))
		}
	}
}

// The servers send their final counters at once, so one timeout covers
// them all: with one server answering late and the other not at all,
// worker 0 gives up one timeout after it began waiting, not the late
// server's delay and then a whole timeout more (1.5 timeouts here).
func TestFinalWaitsOneTimeoutForAllServers(t *testing.T) {
	const timeout = 2 * time.Second
	gaveUp := make(chan struct{})
	err := comm.Run(3, func(c comm.Communicator) error {
		switch c.Rank() {
		case 1: // answers late
			time.Sleep(timeout / 2)
			return c.Send(FinalSite, 0, encodeCounters(Counters{Updates: 1}))
		case 2: // stalled: ends only after worker 0 gave up on it
			<-gaveUp
			return nil
		}
		defer close(gaveUp)
		start := time.Now()
		_, err := Final(c, []int{1, 2}, timeout)
		if err == nil || !strings.Contains(err.Error(), "server rank 2 did not answer") {
			return fmt.Errorf("Final: %v; want server rank 2's timeout", err)
		}
		if waited := time.Since(start); waited > timeout*7/5 {
			return fmt.Errorf("Final gave up after %v; want about one timeout, %v", waited, timeout)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// slowEvaluation is a stepper whose evaluations take d: an exact
// evaluation of a large graph.
type slowEvaluation struct {
	train.Stepper
	d time.Duration
}

func (s slowEvaluation) Evaluate(step int) (train.Evaluation, error) {
	time.Sleep(s.d)
	return s.Stepper.Evaluate(step)
}

// An evaluation of worker 0 that outlasts the timeout is no stall: the
// servers wait for it (all of them at the last epoch, when the other
// workers are done) and, in a synchronous run, so do the workers whose
// gradients the step holds, and the run completes every epoch.
func TestEvaluationsLongerThanTheTimeout(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	cfg := testConfig("sage")
	cfg.Epochs = 2
	const timeout = 200 * time.Millisecond
	for _, sync := range []bool{false, true} {
		newStepper := stepperFactory(t, cfg, p, 2)
		slow := func(w int) (train.Stepper, error) {
			st, err := newStepper(w)
			if w == 0 && err == nil {
				st = slowEvaluation{st, 4 * timeout}
			}
			return st, err
		}
		res, err := Run(context.Background(), cfg, p, Options{Workers: 2, Servers: 2, MaxStaleness: -1, Sync: sync,
			Timeout: timeout, NewStepper: slow}, nil)
		if err != nil {
			t.Fatalf("sync %v: %v", sync, err)
		}
		if res.Epochs != cfg.Epochs {
			t.Fatalf("sync %v: %d epochs of %d", sync, res.Epochs, cfg.Epochs)
		}
	}
}
