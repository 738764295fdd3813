package dataparallel

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/comm/commtest"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

// evaluateWorkers runs New on every part in the in-process group, set on
// each stepper, then evaluates the untrained model on every worker, and
// returns the per-worker evaluations and the bytes the process allocated
// during the evaluation alone (between two barriers).
func evaluateWorkers(t *testing.T, cfg train.Config, parts []*partstore.Part, set func(*Stepper)) ([]train.Evaluation, uint64) {
	t.Helper()
	evs := make([]train.Evaluation, len(parts))
	var before, after runtime.MemStats
	barrier := func(c comm.Communicator) error {
		return c.AllToAll("test.barrier", make([][]byte, c.Size()), make([][]byte, c.Size()))
	}
	err := withTimeout(t, func() error {
		return comm.Run(len(parts), func(c comm.Communicator) error {
			s, err := New(c, cfg, parts[c.Rank()], "neighbor:2"+strings.Repeat(",2", cfg.Model.Layers-1), 8)
			if err != nil {
				return err
			}
			set(s)
			if err := barrier(c); err != nil {
				return err
			}
			if c.Rank() == 0 {
				runtime.ReadMemStats(&before)
			}
			if err := barrier(c); err != nil {
				return err
			}
			if evs[c.Rank()], err = s.Evaluate(0); err != nil {
				return err
			}
			if err := barrier(c); err != nil {
				return err
			}
			if c.Rank() == 0 {
				runtime.ReadMemStats(&after)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs, after.TotalAlloc - before.TotalAlloc
}

// In the in-process group, evaluation over shared rows, a slice of
// destinations at a time, gives each worker exactly the evaluation that
// fetching its whole neighbourhood's rows gives: for every model, dense,
// sparse and bf16 features, hidden layers rounded to bf16 or not, 1 to 3
// layers, and slices of every size down to one destination.
func TestSharedEvaluationEqualsFetched(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	layout := randomLayout(t, p, 4)
	sp := p
	sp.Features = nn.NewFeatures(p.Features.Dense, nn.ForceSparse)
	bp := p
	bp.Features = nn.BF16Features(p.WithBF16Features().FeaturesBF16)
	for _, in := range []struct {
		name string
		p    train.Problem
		bf16 bool
	}{{"dense", p, false}, {"sparse", sp, false}, {"dense, bf16", p, true}, {"bf16 features", bp, true}} {
		for _, model := range []string{"gcn", "sage", "gat", "mlp"} {
			for _, layers := range []int{1, 2, 3} {
				cfg := traintest.Config(model, layers, 3)
				want, _ := evaluateWorkers(t, cfg, Parts(in.p, classes, layout), func(s *Stepper) { s.eval.fetchAll, s.eval.bf16 = true, in.bf16 })
				for _, chunk := range []int{0, 1, 7} {
					got, _ := evaluateWorkers(t, cfg, Parts(in.p, classes, layout), func(s *Stepper) { s.eval.chunk, s.eval.bf16 = chunk, in.bf16 })
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s of %d layers, %s features, slices of %d: shared rows' evaluation %+v, fetched rows' %+v", model, layers, in.name, chunk, got, want)
					}
				}
			}
		}
	}
}

// Four workers in one process evaluate within about the memory of one
// process's evaluation, not four times it: on a graph whose parts are
// random, so that each worker's neighbourhood is most of the graph, the
// bytes their first evaluation allocates stay below 1.5 times one
// process's, where fetching every worker's neighbourhood allocates more
// than twice one process's.
func TestSharedEvaluationMemoryIsNotPerWorker(t *testing.T) {
	p := traintest.SBM(t, 6000, 32, 4)
	layout := randomLayout(t, p, 4)
	cfg := testConfig("sage")
	cfg.Model.Hidden = 64
	ref, err := minibatch.New(cfg, p, unionSampler{}, minibatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ref.Evaluate(0); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	one := after.TotalAlloc - before.TotalAlloc
	// The slices as small, against the graph, as one process's are
	// against a graph of millions of nodes.
	_, shared := evaluateWorkers(t, cfg, Parts(p, classes, layout), func(s *Stepper) { s.eval.chunk = 64 })
	_, fetched := evaluateWorkers(t, cfg, Parts(p, classes, layout), func(s *Stepper) { s.eval.fetchAll = true })
	t.Logf("allocated by the evaluation: one process %d bytes, 4 workers sharing rows %d, 4 workers fetching rows %d", one, shared, fetched)
	if 2*shared > 3*one {
		t.Errorf("4 workers' evaluation over shared rows allocated %d bytes; one process's %d", shared, one)
	}
	if fetched < 2*one {
		t.Errorf("4 workers fetching their rows allocated %d bytes, one process %d: the measurement cannot tell per-worker copies apart", fetched, one)
	}
}

// An evaluation that would take more memory than is available is refused
// before it takes it, on every worker, with an error naming the size and
// the memory available: over shared rows and fetching them.
func TestEvaluationBeyondMemoryRefused(t *testing.T) {
	p := traintest.SBM(t, 6000, 32, 4)
	layout := randomLayout(t, p, 2)
	cfg := testConfig("sage")
	cfg.Model.Hidden = 64 // layers of 6000·64·4 bytes: 1.5 MiB
	defer func(f func() (int64, bool), floor int64) { availableMemory, roomFloor = f, floor }(availableMemory, roomFloor)
	roomFloor = 0
	for _, fetch := range []bool{false, true} {
		for _, avail := range []int64{1 << 30, 1 << 20} {
			availableMemory = func() (int64, bool) { return avail, true }
			evs := make([]train.Evaluation, 2)
			errs := make([]error, 2)
			err := withTimeout(t, func() error {
				return comm.Run(2, func(c comm.Communicator) error {
					s, err := New(c, cfg, Parts(p, classes, layout)[c.Rank()], "neighbor:2,2", 8)
					if err != nil {
						return err
					}
					s.eval.fetchAll = fetch
					evs[c.Rank()], errs[c.Rank()] = s.Evaluate(0)
					if fetch && errs[c.Rank()] == nil && len(s.eval.block.Input) != s.eval.wholeRows {
						// What the check before training counts.
						t.Errorf("rank %d: the whole neighbourhood has %d rows; the part has %d columns", c.Rank(), len(s.eval.block.Input), s.eval.wholeRows)
					}
					return errs[c.Rank()]
				})
			})
			switch {
			case avail == 1<<30 && err != nil:
				t.Fatalf("fetching %v, 1 GiB available: %v", fetch, err)
			case avail == 1<<30:
				if evs[0].ValCount == 0 {
					t.Fatalf("fetching %v: evaluated nothing", fetch)
				}
			default:
				for r, e := range errs {
					if e == nil || !strings.Contains(e.Error(), "exact evaluation would take") || !strings.Contains(e.Error(), "more than the 1.0 MiB of memory available") {
						t.Fatalf("fetching %v, 1 MiB available: rank %d's error %v", fetch, r, e)
					}
				}
			}
		}
	}
}

// A run whose evaluation would not fit in the memory available stops
// before it trains, with the error naming the size, the memory available
// and what to do instead: in one process (shared rows) and over TCP
// (fetched rows), on every worker. With the memory to evaluate, it trains.
func TestEvaluationBeyondMemoryRefusedBeforeTraining(t *testing.T) {
	p := traintest.SBM(t, 6000, 32, 4)
	layout := randomLayout(t, p, 2)
	cfg := traintest.Config("sage", 2, 1)
	cfg.Model.Hidden = 64 // layers of 6000·64·4 bytes: 1.5 MiB
	defer func(f func() (int64, bool), floor int64) { availableMemory, roomFloor = f, floor }(availableMemory, roomFloor)
	roomFloor = 0
	for _, avail := range []int64{1 << 30, 1 << 20} {
		availableMemory = func() (int64, bool) { return avail, true }
		var batches atomic.Int64
		opts := Options{Sampler: "neighbor:2,2", BatchSize: 64, OnBatch: func(int, int, int) { batches.Add(1) }}
		run := map[string]func() []error{
			"in one process": func() []error {
				_, _, err := RunInProcess(context.Background(), cfg, p, layout, opts, nil)
				return []error{err}
			},
			"over TCP": func() []error {
				if testing.Short() {
					return nil
				}
				parts := Parts(p, classes, layout)
				return commtest.TCP(t, 2, "room test", func(c comm.Communicator) error {
					_, _, err := RunWorker(context.Background(), c, cfg, parts[c.Rank()], opts, nil)
					return err
				})
			},
		}
		for _, name := range []string{"in one process", "over TCP"} {
			batches.Store(0)
			var errs []error
			withTimeout(t, func() error { errs = run[name](); return nil })
			for r, err := range errs {
				switch {
				case avail == 1<<30 && err != nil:
					t.Fatalf("%s, 1 GiB available: rank %d: %v", name, r, err)
				case avail == 1<<30:
				case err == nil || !strings.Contains(err.Error(), "exact evaluation would take") || !strings.Contains(err.Error(), "more than the 1.0 MiB of memory available") || !strings.Contains(err.Error(), "instead"):
					t.Fatalf("%s, 1 MiB available: rank %d's error %v", name, r, err)
				}
			}
			if trained := batches.Load() > 0; len(errs) > 0 && trained != (avail == 1<<30) {
				t.Errorf("%s, %d bytes available: %d batches trained", name, avail, batches.Load())
			}
		}
	}
}
