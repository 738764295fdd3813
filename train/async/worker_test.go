package async

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/traintest"
)

// hookedStepper calls hook with the step's number before each step.
type hookedStepper struct {
	train.Stepper
	hook  func(step int) error
	steps int
}

func (s *hookedStepper) Step(b train.Batch) (float64, error) {
	if err := s.hook(s.steps); err != nil {
		return 0, err
	}
	s.steps++
	return s.Stepper.Step(b)
}

// Each server counts the gradients it keeps, and a gradient fresh on one
// shard may be stale on another, so one server can have the run's
// gradients while the other still lacks one: the worker goes on pushing
// to the other until it has them too, and every shard is trained on the
// run's gradients. Here (the rule drop, 2 gradients an update) worker 1,
// driven by hand, pushes its one gradient to server A before worker 0's
// first step and to server B (a message delayed) before its second: A
// keeps both of worker 0's first two gradients, B drops worker 0's second
// (worker 1's completed an update in between), and A has the epoch's
// gradients one step before B.
func TestEveryServerGetsTheRunsGradients(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	cfg := testConfig("sage")
	st, err := stepperFactory(t, cfg, p, 1)(0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Batches() < 2 {
		t.Fatalf("worker 0 has %d batches; the test needs 2 or more", st.Batches())
	}
	budget := int64(st.Batches() + 1) // one epoch: worker 0's batches and worker 1's one
	rule, err := ParseRule("drop")
	if err != nil {
		t.Fatal(err)
	}
	const serverA, serverB = 2, 3
	params, plan := st.Model().Params(), Plan(paramSizes(st), 2)
	shards := make([]*Shard, 2)
	for k := range shards {
		var values [][]float32
		var decays []float64
		for _, i := range plan[k] {
			values, decays = append(values, params[i].Value.Data), append(decays, params[i].WeightDecay)
		}
		if shards[k], err = NewShard(Settings{Optimizer: cfg.Optimizer, Rule: rule, MaxStaleness: -1, PerUpdate: 2}, values, decays); err != nil {
			t.Fatal(err)
		}
	}
	counters := make([]Counters, 2)
	steps, acted, handDone := make(chan int), make(chan error), make(chan struct{})
	err = comm.Run(4, func(c comm.Communicator) error {
		switch c.Rank() {
		case serverA, serverB:
			k := c.Rank() - serverA
			var err error
			counters[k], err = Serve(c, shards[k], ServerConfig{Workers: []int{0, 1}, Timeout: 10 * time.Second, Epochs: 1})
			return err
		case 1:
			defer close(handDone)
			return handWorker(c, []fakeWorker{{c, serverA}, {c, serverB}}, shards, steps, acted)
		}
		hs := &hookedStepper{Stepper: st, hook: func(step int) error {
			if step > 1 {
				return nil
			}
			select {
			case steps <- step:
				return <-acted
			case <-handDone:
				return errors.New("worker 1 ended before worker 0's second step")
			}
		}}
		err := Work(c, hs, WorkerConfig{Servers: []int{serverA, serverB}, Plan: plan, Timeout: 10 * time.Second})
		close(steps)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []int64{0, 1} {
		if cn := counters[k]; cn.Pushes != budget || cn.Dropped != want {
			t.Errorf("server %c kept %d gradients and dropped %d; want the epoch's %d, and %d dropped", 'A'+k, cn.Pushes, cn.Dropped, budget, want)
		}
	}
}

// handWorker is worker 1 of TestEveryServerGetsTheRunsGradients: it
// starts with one batch an epoch, pushes its gradient, computed from
// version 0, to server A at worker 0's step 0 and to server B at its step
// 1, then is done.
func handWorker(c comm.Communicator, servers []fakeWorker, shards []*Shard, steps <-chan int, acted chan<- error) error {
	for _, s := range servers {
		if err := s.start(); err != nil {
			return err
		}
	}
	for step := range steps {
		s := servers[step]
		err := s.send(request{kind: kindPush, version: 0, grad: make([]float32, shards[step].Size())})
		var r reply
		if err == nil {
			r, err = s.reply()
		}
		if err == nil && (r.stop || r.version != step) {
			err = fmt.Errorf("worker 1's push to server %c answered at version %d, stop %v; want version %d", 'A'+step, r.version, r.stop, step)
		}
		acted <- err
		if step == 1 {
			break
		}
	}
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.send(request{kind: kindDone}))
	}
	return errors.Join(errs...)
}
