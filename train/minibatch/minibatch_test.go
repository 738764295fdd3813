package minibatch

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/dataset"
	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/metrics"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/fullgraph"
	"github.com/graft-gnn/graft/train/traintest"
)

const classes = traintest.Classes

// testConfig is the small model the package's tests train.
func testConfig(model string) train.Config { return traintest.Config(model, 2, 5) }

type outcome struct {
	losses, valAcc []float64
	params         []float32
}

func collect(t *testing.T, res train.Result, loop *train.Loop, err error, o *outcome) outcome {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range loop.Model().Params() {
		o.params = append(o.params, p.Value.Data...)
	}
	return *o
}

func runSampled(t *testing.T, cfg train.Config, p train.Problem, spec string, batch int) outcome {
	var o outcome
	res, loop, err := Run(context.Background(), cfg, p, RunOptions{Sampler: spec, BatchSize: batch}, func(m metrics.Epoch) error {
		o.losses, o.valAcc = append(o.losses, m.Loss), append(o.valAcc, m.ValAcc)
		return nil
	})
	return collect(t, res, loop, err, &o)
}

func runFull(t *testing.T, cfg train.Config, p train.Problem) outcome {
	var o outcome
	res, loop, err := fullgraph.RunInProcess(context.Background(), cfg, p, nil, fullgraph.Options{}, func(m metrics.Epoch) error {
		o.losses, o.valAcc = append(o.losses, m.Loss), append(o.valAcc, m.ValAcc)
		return nil
	})
	return collect(t, res, loop, err, &o)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// "Sampled code is checked against the single-process result it must
// equal": one batch holding every training node, with every neighbour
// kept, is full-graph training; its losses, validation accuracies (from
// layer-wise inference) and parameters are the full-graph trainer's to
// float rounding, with dropout on.
func TestWholeNeighbourhoodBatchIsFullGraphTraining(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	for _, tc := range []struct {
		model   string
		layers  int
		sampler string
	}{{"gcn", 2, "neighbor:-1,-1"}, {"sage", 2, "neighbor:-1,-1"}, {"gat", 2, "neighbor:-1,-1"},
		{"gcn", 3, "neighbor:-1,-1,-1"}, {"sage", 3, "neighbor:-1,-1,-1"}, {"gat", 3, "neighbor:-1,-1,-1"}} {
		t.Run(fmt.Sprintf("%s-%d", tc.model, tc.layers), func(t *testing.T) {
			cfg := testConfig(tc.model)
			cfg.Model.Layers = tc.layers
			want := runFull(t, cfg, p)
			got := runSampled(t, cfg, p, tc.sampler, len(p.Train))
			for e := range want.losses {
				if !near(got.losses[e], want.losses[e], 1e-5) || got.valAcc[e] != want.valAcc[e] {
					t.Fatalf("epoch %d: loss %v, val %v sampled; %v, %v full-graph", e+1, got.losses[e], got.valAcc[e], want.losses[e], want.valAcc[e])
				}
			}
			for i := range want.params {
				if !near(float64(got.params[i]), float64(want.params[i]), 1e-4) {
					t.Fatalf("parameter %d: %v sampled, %v full-graph", i, got.params[i], want.params[i])
				}
			}
		})
	}
}

// "Every sampler is deterministic": a run gives the same bits at
// GOMAXPROCS 1, 2 and 7.
func TestRunsDoNotDependOnGOMAXPROCS(t *testing.T) {
	p := traintest.SBMProblem(t, 600)
	cfg := testConfig("sage")
	run := func(procs int) outcome {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return runSampled(t, cfg, p, "neighbor:5,3", 40)
	}
	want := run(1)
	for _, procs := range []int{2, 7} {
		got := run(procs)
		if !slices.Equal(got.losses, want.losses) || !slices.Equal(got.params, want.params) {
			t.Fatalf("GOMAXPROCS %d: losses %v, want %v", procs, got.losses, want.losses)
		}
	}
}

// A fast accuracy guard: neighbour-sampled GraphSAGE on Cora's public
// split, three seeds.
func TestCoraNeighbourSampledSAGEAccuracy(t *testing.T) {
	ds, err := dataset.EmbeddedCora()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ds.Split("public", 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := fullgraph.FromDataset(ds, s, nn.Auto, true)
	if err != nil {
		t.Fatal(err)
	}
	p := train.Problem{Graph: ds.Graph, Features: d.Features, Labels: d.Labels, Train: d.Train, Val: d.Val, Test: d.Test}
	var sum float64
	seeds := []uint64{1, 2, 3}
	for _, seed := range seeds {
		cfg := train.Config{Model: nn.Config{Model: "sage", Hidden: 64, Classes: ds.NumClasses, Dropout: 0.5, Seed: seed},
			Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.01}, WeightDecay: 5e-4, Epochs: 60, Patience: 30}
		res, _, err := Run(context.Background(), cfg, p, RunOptions{Sampler: "neighbor:10,10", BatchSize: 32}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: best epoch %d, val %.3f, test %.3f", seed, res.Best.Epoch, res.Best.ValAcc, res.Best.TestAcc)
		sum += res.Best.TestAcc
	}
	if mean := sum / float64(len(seeds)); mean < 0.76 {
		t.Errorf("mean test accuracy %.4f over %d seeds, want ≥ 0.76", mean, len(seeds))
	}
}

// "After the first epoch an epoch allocates close to nothing, and RSS does
// not grow over 50 epochs" (PyG's NeighborLoader users report the
// opposite): batches, blocks and the model's buffers are recycled.
func TestEpochsAllocateLittleAndMemoryStaysFlat(t *testing.T) {
	p := traintest.SBMProblem(t, 2000)
	// With or without dropout the first layer reads the input rows where
	// they lie (nn.Selected), its operator renumbered and, with dropout,
	// the rows' keep bits in storage of their own.
	for _, dropout := range []float64{testConfig("sage").Model.Dropout, 0} {
		t.Run(fmt.Sprintf("dropout=%v", dropout), func(t *testing.T) {
			cfg := testConfig("sage")
			cfg.Epochs, cfg.Model.Dropout = 50, dropout
			var allocs []uint64
			var rss []int64
			_, _, err := Run(context.Background(), cfg, p, RunOptions{Sampler: "neighbor:10,5", BatchSize: 64}, func(e metrics.Epoch) error {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				allocs, rss = append(allocs, ms.TotalAlloc), append(rss, e.RSSBytes)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			perEpoch := float64(allocs[len(allocs)-1]-allocs[4]) / float64(len(allocs)-5)
			batches := float64(len(p.Train)+63) / 64
			t.Logf("%.0f bytes allocated per epoch of %.0f batches after the fifth; RSS %d → %d", perEpoch, batches, rss[4], rss[len(rss)-1])
			if perEpoch > 64<<10 {
				t.Errorf("%.0f bytes allocated per epoch after the fifth, want ≤ 64 KiB", perEpoch)
			}
			if rss[4] > 0 && float64(rss[len(rss)-1]) > 1.1*float64(rss[4]) {
				t.Errorf("RSS grew from %d to %d bytes between epochs 5 and 50", rss[4], rss[len(rss)-1])
			}
		})
	}
}

// Accumulating more micro-batches than the feed prepares ahead neither
// blocks nor changes what a step computes: eight accumulated batches of 5
// step as batches of 40 (to float rounding), with dropout off.
func TestAccumulatingManyBatches(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	cfg := testConfig("sage")
	cfg.Model.Dropout = 0
	one := runSampled(t, cfg, p, "neighbor:-1,-1", 40)
	cfg.Accumulate = 8
	many := runSampled(t, cfg, p, "neighbor:-1,-1", 5)
	for i := range one.params {
		if !near(float64(many.params[i]), float64(one.params[i]), 1e-4) {
			t.Fatalf("parameter %d: %v accumulated, %v in one batch", i, many.params[i], one.params[i])
		}
	}
}

// neighborStepper is a stepper of cfg's 2-layer GraphSAGE on p, batches
// of batch seeds drawn by neighbor:5,5; the caller closes it.
func neighborStepper(t *testing.T, cfg train.Config, p train.Problem, batch int, opts Options) *Stepper {
	t.Helper()
	sampler, err := sample.New("neighbor:5,5", sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: batch, Layers: 2, Aggregation: sample.Mean, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, p, sampler, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Exact evaluation lets go of outputs larger than keepBytes (and the
// memory account stops counting them), and evaluating again after letting
// go gives the same sums.
func TestEvaluatorLetsLargeOutputsGo(t *testing.T) {
	p := traintest.SBMProblem(t, 500)
	cfg := testConfig("sage")
	s := neighborStepper(t, cfg, p, 64, Options{})
	defer s.Close()
	e := s.eval.(*evaluator)
	kept, err := e.evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if e.cur[0].Data == nil {
		t.Fatal("outputs under keepBytes were let go")
	}
	e.keepBytes = 0
	var held int64
	for i := range 3 {
		got, err := e.evaluate()
		if err != nil {
			t.Fatal(err)
		}
		// What the evaluation let go is no longer counted as held.
		if now := memacct.Held(memacct.Activations); i > 0 && now != held {
			t.Fatalf("evaluation %d: activations held %d bytes, %d after the one before", i+1, now, held)
		} else {
			held = now
		}
		if e.cur[0].Data != nil || e.cur[1].Data != nil {
			t.Fatal("outputs over keepBytes were kept")
		}
		if got.ValCorrect != kept.ValCorrect || got.ValLossSum != kept.ValLossSum || got.TestCorrect != kept.TestCorrect {
			t.Fatalf("evaluation after letting go %+v, before %+v", got, kept)
		}
	}
}

// Exact evaluation of a model whose last layer aggregates narrower
// projections of its input (GCN, SAGE: 4 classes against 32 hidden)
// stores those projections of every node instead of the layer before's
// output, and evaluates as it did from that output: the same correct
// counts, the validation loss to float rounding.
func TestEvaluationFromProjections(t *testing.T) {
	p := traintest.SBMProblem(t, 500)
	for _, model := range []string{"gcn", "sage"} {
		cfg := testConfig(model)
		cfg.Model.Hidden, cfg.Model.Layers = 32, 3
		sampler, err := sample.New("neighbor:5,5,5", sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: 64, Layers: 3, Aggregation: sample.Mean, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg, p, sampler, Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := s.eval.(*evaluator)
		e.unprojected = true
		want, err := e.evaluate()
		if err != nil {
			t.Fatal(err)
		}
		e.unprojected = false
		e.cur[1] = tensor.Matrix{} // the layer before the last's output, held from the first pass
		got, err := e.evaluate()
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if e.proj[0].Rows != p.Graph.N || e.proj[0].Cols != classes || cap(e.cur[1].Data) >= p.Graph.N*32 {
			t.Fatalf("%s: projections %dx%d, the layer before the last holds %d values", model, e.proj[0].Rows, e.proj[0].Cols, cap(e.cur[1].Data))
		}
		if got.TrainCorrect != want.TrainCorrect || got.ValCorrect != want.ValCorrect || got.TestCorrect != want.TestCorrect ||
			!near(got.ValLossSum, want.ValLossSum, 1e-5) {
			t.Fatalf("%s: from the projections %+v, from the output %+v", model, got, want)
		}
	}
}

// Before an exact evaluation too large to keep (releaseFeed), the stepper
// stops the feed and lets every batch's buffers go, so that batches
// sampled ahead are not held beside evaluation's outputs; the feed starts
// again where training left off, and the run is the same bit for bit.
func TestLargeEvaluationLetsTheFeedsBatchesGo(t *testing.T) {
	p := traintest.SBMProblem(t, 500)
	cfg := testConfig("sage")
	cfg.Epochs = 4
	inspected := 0 // evaluations after which the feed was inspected
	run := func(release bool) (outcome, int) {
		s := neighborStepper(t, cfg, p, 16, Options{})
		defer s.Close()
		if s.releaseFeed {
			t.Fatal("a 500-node graph's evaluation is over keepBytes")
		}
		s.releaseFeed = release
		loop, err := train.New(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		var o outcome
		held := 0 // batches holding gathered rows after an evaluation
		_, err = loop.Run(context.Background(), train.Hooks{OnEpoch: func(m train.Metrics) error {
			o.losses, o.valAcc = append(o.losses, m.Loss), append(o.valAcc, m.ValAcc)
			if !release {
				return nil // the producer runs on, filling batches
			}
			if s.feed.on {
				t.Error("the feed runs on after a large evaluation")
				return nil
			}
			inspected++
			for range len(s.feed.free) {
				b := <-s.feed.free
				if b.gather.dense.Data != nil || b.batch.Input != nil {
					held++
				}
				s.feed.free <- b
			}
			return nil
		}})
		return collect(t, train.Result{}, loop, err, &o), held
	}
	kept, _ := run(false)
	released, held := run(true)
	if inspected != cfg.Epochs {
		t.Fatalf("the feed was let go after %d of %d evaluations", inspected, cfg.Epochs)
	}
	if held != 0 {
		t.Errorf("%d batches held their buffers after a large evaluation", held)
	}
	if !slices.Equal(kept.losses, released.losses) || !slices.Equal(kept.valAcc, released.valAcc) || !slices.Equal(kept.params, released.params) {
		t.Errorf("letting the feed go changed the run: losses %v against %v", released.losses, kept.losses)
	}
}

// heldEstimate is over keepBytes for a graph of ogbn-products' size: 3
// SAGE layers of width 256 hold the first layer's output and the last
// layer's two projections (47 classes wide) of every node, over 3 GB.
func TestEvaluationOfALargeGraphIsLarge(t *testing.T) {
	m, err := nn.NewModel(nn.Config{Model: "sage", InFeatures: 100, Hidden: 256, Classes: 47, Layers: 3})
	if err != nil {
		t.Fatal(err)
	}
	e := &evaluator{model: m, p: train.Problem{Graph: &graph.Graph{N: 2_400_000}}}
	if want := 4 * 2_400_000 * (256 + 2*47); e.heldEstimate() != want || want < keepBytes {
		t.Fatalf("heldEstimate %d bytes for 2.4M nodes at width 256, want %d", e.heldEstimate(), want)
	}
}

// heldEstimate, reckoned from the model's layer widths (nn.Model's
// OutputWidth) before any evaluation, is what exact evaluation then holds:
// a hidden layer's output for every node, the last layer's for the
// labelled ones only, the projections in place of the layer before the
// last where the last aggregates them, bfloat16 hidden outputs at bf16.
// A one-layer model has no hidden output however wide --hidden is, and a
// GAT's last layer averages its heads.
func TestHeldEstimateIsWhatEvaluationHolds(t *testing.T) {
	all := traintest.SBMProblem(t, 500)
	some := all // 50 of the 500 nodes labelled: the last layer's rows are theirs only
	some.Train, some.Val, some.Test = all.Train[:min(30, len(all.Train))], all.Val[:min(10, len(all.Val))], all.Test[:min(10, len(all.Test))]
	for _, c := range []struct {
		model                    string
		layers, hidden, outHeads int
		bf16, fewLabelled        bool
	}{
		{"gcn", 1, 64, 0, false, false}, {"sage", 1, 64, 0, true, false}, {"gat", 1, 64, 3, false, false},
		{"gcn", 2, 32, 0, false, false}, {"sage", 3, 32, 0, false, false}, {"sage", 2, 2, 0, false, false}, {"mlp", 2, 16, 0, false, false},
		{"gat", 2, 8, 3, false, false}, {"gat", 3, 8, 1, true, false}, {"gcn", 3, 32, 0, true, false},
		{"gcn", 2, 32, 0, false, true}, {"sage", 3, 16, 0, true, true}, {"gat", 2, 8, 3, false, true},
	} {
		name := fmt.Sprintf("%s/%d layers/hidden %d/output heads %d/bf16 %v/few labelled %v", c.model, c.layers, c.hidden, c.outHeads, c.bf16, c.fewLabelled)
		p := all
		if c.fewLabelled {
			p = some
		}
		cfg := testConfig(c.model)
		cfg.Model.Layers, cfg.Model.Hidden, cfg.Model.Heads, cfg.Model.OutputHeads = c.layers, c.hidden, 4, c.outHeads
		model, err := train.NewModel(cfg, p.Features.Cols())
		if err != nil {
			t.Fatal(err)
		}
		agg, err := sample.AggregationOf(c.model)
		if err != nil {
			t.Fatal(err)
		}
		q := p
		if c.bf16 {
			q = p.WithBF16Features()
		}
		e := newEvaluator(model, q, sample.NewNeighborhoods(p.Graph, agg), c.bf16)
		e.keepBytes = math.MaxInt
		want := e.heldEstimate()
		if _, err := e.evaluate(); err != nil {
			t.Fatal(err)
		}
		if got := e.outputBytes(); got != want {
			t.Errorf("%s: evaluation holds %d bytes, heldEstimate said %d", name, got, want)
		}
	}
}

// PrepareAlone samples and gathers the very batches training draws, with
// their figures, and leaves training as it was: a run that stops mid-epoch,
// with the feed's pool full, to prepare a whole epoch alone goes on bit for
// bit as one that does not, and its stats count training's batches only.
func TestPrepareAloneLeavesTrainingAsItWas(t *testing.T) {
	p := traintest.SBMProblem(t, 400)
	cfg := testConfig("sage")
	run := func(alone bool) (outcome, Stats, Stats) {
		s := neighborStepper(t, cfg, p, 32, Options{})
		defer s.Close()
		loop, err := train.New(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		var o outcome
		var trained, prepared Stats
		for epoch := 1; epoch <= 3; epoch++ {
			for b := range s.Batches() {
				loss, err := loop.Step(epoch, b)
				if err != nil {
					t.Fatal(err)
				}
				o.losses = append(o.losses, loss)
				if alone && epoch == 3 && b == 1 {
					for len(s.feed.ready) < cap(s.feed.ready) { // the producer has filled every free batch
						runtime.Gosched()
					}
					if prepared, err = s.PrepareAlone(3); err != nil {
						t.Fatal(err)
					}
					if s.feed.on || len(s.feed.free) != cap(s.feed.free)-len(s.pending) {
						t.Fatalf("after PrepareAlone the feed is on (%v) or holds %d of %d free batches with %d pending", s.feed.on, len(s.feed.free), cap(s.feed.free), len(s.pending))
					}
				}
			}
			st := s.TakeStats()
			if epoch == 3 {
				trained = st
			}
		}
		return collect(t, train.Result{}, loop, nil, &o), trained, prepared
	}
	plain, plainTrained, _ := run(false)
	interrupted, trained, alone := run(true)
	if !slices.Equal(plain.losses, interrupted.losses) || !slices.Equal(plain.params, interrupted.params) {
		t.Errorf("preparing an epoch alone changed training: losses %v against %v", interrupted.losses, plain.losses)
	}
	same := func(a, b Stats) bool {
		return a.Batches == b.Batches && a.InputNodes == b.InputNodes && a.InputEdges == b.InputEdges &&
			a.Seeds == b.Seeds && a.GatheredBytes == b.GatheredBytes && a.Flops == b.Flops
	}
	if !same(trained, plainTrained) {
		t.Errorf("epoch 3's stats %+v with an epoch prepared alone in it, %+v without", trained, plainTrained)
	}
	if !same(alone, trained) {
		t.Errorf("epoch 3 prepared alone %+v, trained %+v: not the same batches", alone, trained)
	}
	if alone.SampleSeconds <= 0 || alone.GatherSeconds <= 0 || alone.ComputeSeconds != 0 {
		t.Errorf("prepared alone: sampling %v s, gathering %v s, compute %v s", alone.SampleSeconds, alone.GatherSeconds, alone.ComputeSeconds)
	}
}

// Letting the feed's batches go takes their blocks' operators (their
// transposes and the operator renumbered to the feature matrix's rows)
// out of the memory account: the account counts them while held, and a
// run that lets the feed go before every large evaluation does not count
// the next epoch's blocks on top.
func TestLettingTheFeedGoReleasesItsOperators(t *testing.T) {
	p := traintest.SBMProblem(t, 500)
	for _, dropout := range []float64{0, 0.5} {
		cfg := testConfig("sage")
		cfg.Model.Dropout, cfg.Model.Hidden = dropout, 32
		held := func() int64 { return memacct.Held(memacct.Operators) }
		base := held()
		s := neighborStepper(t, cfg, p, 16, Options{})
		loop, err := train.New(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		for b := range s.Batches() {
			if _, err := loop.Step(1, b); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if held() == base {
			t.Fatalf("dropout %v: an epoch's blocks counted no operators", dropout)
		}
		s.feed.release()
		if held() != base {
			t.Errorf("dropout %v: %d bytes of operators still counted after the feed let its batches go", dropout, held()-base)
		}
	}
}
