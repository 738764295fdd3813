package dataparallel

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/graft-gnn/graft/comm"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/partstore"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
	"github.com/graft-gnn/graft/train/traintest"
)

const classes = traintest.Classes

// testConfig is the small model the package's tests train.
func testConfig(model string) train.Config { return traintest.Config(model, 2, 3) }

// randomLayout splits p's graph into k random parts.
func randomLayout(t testing.TB, p train.Problem, k int) *partition.Layout {
	t.Helper()
	parts, err := partition.Random{}.Partition(p.Graph, k, partition.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := partition.BuildLayout(p.Graph, parts, k)
	if err != nil {
		t.Fatal(err)
	}
	return layout
}

// trace is what a run's steps give: every step's loss, and the parameters
// after the last.
type trace struct {
	losses []float64
	params []float32
}

// steps runs epochs of optimiser steps on loop (every worker's in
// lockstep) and returns its trace.
func steps(loop *train.Loop, batches, accumulate, epochs int) (trace, error) {
	var tr trace
	for epoch := 1; epoch <= epochs; epoch++ {
		for first := 0; first < batches; first += accumulate {
			loss, err := loop.Step(epoch, first)
			if err != nil {
				return tr, err
			}
			tr.losses = append(tr.losses, loss)
		}
	}
	for _, p := range loop.Model().Params() {
		tr.params = append(tr.params, p.Value.Data...)
	}
	return tr, nil
}

// runParts trains the parts with one worker each, batch seeds per worker,
// and returns rank 0's trace.
func runParts(t *testing.T, cfg train.Config, parts []*partstore.Part, spec string, batch, epochs int) trace {
	t.Helper()
	var tr trace
	err := withTimeout(t, func() error {
		return comm.Run(len(parts), func(c comm.Communicator) error {
			s, err := New(c, cfg, parts[c.Rank()], spec, batch)
			if err != nil {
				return err
			}
			wc := cfg
			if c.Size() > 1 {
				wc.Reducer = &train.CommReducer{Comm: c}
			}
			loop, err := train.New(wc, s)
			if err != nil {
				return err
			}
			got, err := steps(loop, s.Batches(), max(cfg.Accumulate, 1), epochs)
			if c.Rank() == 0 {
				tr = got
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// withTimeout runs f, failing the test if it has not returned in a minute:
// a hang is a failure, not a stuck suite.
func withTimeout(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the workers hang")
		return nil
	}
}

// unionSampler deals batch index of an epoch as the union of every
// worker's batch index: the single-process batch N workers' batches make
// together.
type unionSampler struct {
	n      func(epoch, index int, seeds []int32, b *sample.Batch) error // samples the given seeds
	trains [][]int32                                                    // per worker, its training nodes
	size   int
	seed   uint64
}

func (u unionSampler) Batches() int {
	most := 0
	for _, tr := range u.trains {
		most = max(most, (len(tr)+u.size-1)/u.size)
	}
	return most
}

func (u unionSampler) Sample(epoch, index int, b *sample.Batch) error {
	var seeds []int32
	for _, tr := range u.trains {
		seeds = append(seeds, Seeds(tr, u.size, u.seed, epoch, index)...)
	}
	return u.n(epoch, index, seeds, b)
}

// runUnion trains in one process, on the whole graph, with the minibatch
// stepper on the union batches of the parts' workers.
func runUnion(t *testing.T, cfg train.Config, p train.Problem, parts []*partstore.Part, fanouts []int, batch, epochs int) trace {
	t.Helper()
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		t.Fatal(err)
	}
	n := sample.NewNeighbor(sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: batch, Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed}, fanouts)
	return runUnionOf(t, cfg, p, parts, func(epoch, _ int, seeds []int32, b *sample.Batch) error { return n.SampleSeeds(epoch, seeds, b) }, batch, epochs)
}

// runUnionOf is runUnion with the union batches' seeds sampled by n; with
// p's features in bf16, at bf16 precision.
func runUnionOf(t *testing.T, cfg train.Config, p train.Problem, parts []*partstore.Part, n func(epoch, index int, seeds []int32, b *sample.Batch) error, batch, epochs int) trace {
	t.Helper()
	u := unionSampler{size: batch, seed: cfg.Model.Seed, n: n}
	for _, sp := range parts {
		var tr []int32
		for _, r := range sp.Train {
			tr = append(tr, sp.Part.Owned[r])
		}
		u.trains = append(u.trains, tr)
	}
	var mo minibatch.Options
	if p.FeaturesBF16 != nil {
		mo.Precision = train.BF16
	}
	s, err := minibatch.New(cfg, p, u, mo)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Model().SetProducts(tensor.FP32Products) // as the workers multiply (New)
	loop, err := train.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := steps(loop, u.Batches(), max(cfg.Accumulate, 1), epochs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// close32 reports whether a and b agree to rel relative to the larger
// magnitude (or to rel absolutely near zero).
func close32(a, b float64, rel float64) bool {
	return math.Abs(a-b) <= rel*max(1, math.Abs(a), math.Abs(b))
}

func checkSame(t *testing.T, what string, got, want trace) {
	t.Helper()
	if len(got.losses) != len(want.losses) || len(got.params) != len(want.params) || len(got.losses) == 0 {
		t.Fatalf("%s: %d steps and %d parameters, want %d and %d", what, len(got.losses), len(got.params), len(want.losses), len(want.params))
	}
	for i := range got.losses {
		if !close32(got.losses[i], want.losses[i], 1e-5) {
			t.Fatalf("%s: step %d's loss %v, want %v", what, i, got.losses[i], want.losses[i])
		}
	}
	for i := range got.params {
		if !close32(float64(got.params[i]), float64(want.params[i]), 1e-4) {
			t.Fatalf("%s: parameter %d is %v, want %v", what, i, got.params[i], want.params[i])
		}
	}
}

// "N workers with batch b per worker give the same loss and parameters as
// 1 worker with batch N·b over the same seeds."
func TestWorkersEqualOneProcessOnTheUnionBatch(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	const k, batch, epochs = 3, 16, 3
	parts := Parts(p, classes, randomLayout(t, p, k))
	for _, model := range []string{"gcn", "sage", "gat"} {
		t.Run(model, func(t *testing.T) {
			cfg := testConfig(model)
			want := runUnion(t, cfg, p, parts, []int{5, 3}, batch, epochs)
			got := runParts(t, cfg, parts, "neighbor:5,3", batch, epochs)
			checkSame(t, model, got, want)
		})
	}
	// Sparse features travel and train sparse, as the one process reads them.
	t.Run("sparse", func(t *testing.T) {
		sp := p
		sp.Features = nn.NewFeatures(p.Features.Dense, nn.ForceSparse)
		sparts := Parts(sp, classes, randomLayout(t, sp, k))
		cfg := testConfig("sage")
		checkSame(t, "sparse", runParts(t, cfg, sparts, "neighbor:5,3", batch, epochs), runUnion(t, cfg, sp, sparts, []int{5, 3}, batch, epochs))
	})
}

// One worker holding the whole graph as its one part is the single-process
// run on the same seeds.
func TestOnePartIsOneProcess(t *testing.T) {
	p := traintest.SBMProblem(t, 200)
	parts := Parts(p, classes, randomLayout(t, p, 1))
	cfg := testConfig("sage")
	checkSame(t, "one part", runParts(t, cfg, parts, "neighbor:4,4", 20, 2), runUnion(t, cfg, p, parts, []int{4, 4}, 20, 2))
}

// unevenParts gives part 0 one training node, part 1 none, and part 2 the
// rest.
func unevenParts(t *testing.T, p train.Problem) []*partstore.Part {
	t.Helper()
	assign := make([]int32, p.Graph.N)
	isTrain := map[int32]bool{}
	for _, v := range p.Train {
		isTrain[v] = true
	}
	one := false
	for v := range assign {
		switch {
		case isTrain[int32(v)] && !one:
			assign[v], one = 0, true
		case isTrain[int32(v)]:
			assign[v] = 2
		case v%2 == 0:
			assign[v] = 1
		default:
			assign[v] = 0
		}
	}
	layout, err := partition.BuildLayout(p.Graph, assign, 3)
	if err != nil {
		t.Fatal(err)
	}
	parts := Parts(p, classes, layout)
	if len(parts[0].Train) != 1 || len(parts[1].Train) != 0 || len(parts[2].Train) < 50 {
		t.Fatalf("parts hold %d, %d and %d training nodes", len(parts[0].Train), len(parts[1].Train), len(parts[2].Train))
	}
	return parts
}

// "Uneven work never hangs": workers with fewer batches (one with a single
// seed, one with none) join the others' collectives, and the run still
// equals the union batches'.
func TestUnevenPartsFinishAndEqualTheUnion(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := unevenParts(t, p)
	for _, model := range []string{"gcn", "gat"} {
		cfg := testConfig(model)
		want := runUnion(t, cfg, p, parts, []int{4, 3}, 12, 2)
		got := runParts(t, cfg, parts, "neighbor:4,3", 12, 2)
		checkSame(t, "uneven "+model, got, want)
	}
}

// "--accumulate K is a K-times larger batch": K micro-batches of b seeds
// per worker equal one step on K·b seeds, here on the union batches, where
// each union batch of K·b per worker holds the same seeds as K of b.
func TestAccumulationEqualsALargerBatch(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 2))
	cfg := testConfig("sage")
	cfg.Model.Dropout = 0 // the dropout clock counts passes: K passes against 1
	const k, batch = 3, 10
	acc := cfg
	acc.Accumulate = k
	got := runParts(t, acc, parts, "neighbor:4,3", batch, 2)
	want := runParts(t, cfg, parts, "neighbor:4,3", k*batch, 2)
	checkSame(t, "accumulate", got, want)
}

func TestNewErrors(t *testing.T) {
	p := traintest.SBMProblem(t, 100)
	parts := Parts(p, classes, randomLayout(t, p, 1))
	cfg := testConfig("sage")
	for _, tc := range []struct {
		spec  string
		batch int
	}{{"saint-node:0", 10}, {"neighbor:5", 10}, {"neighbor:5,5", 0}, {"cluster:4:5", 10}, {"full", 10}} {
		err := comm.Run(1, func(c comm.Communicator) error {
			_, err := New(c, cfg, parts[0], tc.spec, tc.batch)
			return err
		})
		if err == nil {
			t.Fatalf("%s with batch %d accepted", tc.spec, tc.batch)
		}
	}
}

// "Distributed evaluation equals single-process evaluation of the same
// parameters": the workers' sums over their own nodes add up to the
// whole graph's layer-wise inference, with an empty part among them.
func TestEvaluationEqualsOneProcess(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	assign := make([]int32, p.Graph.N)
	for v := range assign {
		assign[v] = int32(v % 3) // part 3 holds nothing
	}
	layout, err := partition.BuildLayout(p.Graph, assign, 4)
	if err != nil {
		t.Fatal(err)
	}
	sp := p
	sp.Features = nn.NewFeatures(p.Features.Dense, nn.ForceSparse)
	for _, in := range []struct {
		name string
		p    train.Problem
	}{{"dense", p}, {"sparse", sp}} {
		parts := Parts(in.p, classes, layout)
		for _, model := range []string{"gcn", "sage", "gat"} {
			cfg := testConfig(model)
			want := oneProcessEvaluation(t, cfg, in.p, minibatch.Options{})
			got := workersEvaluation(t, cfg, parts, false)
			if got.TrainCorrect != want.TrainCorrect || got.ValCorrect != want.ValCorrect || got.TestCorrect != want.TestCorrect ||
				got.TrainCount != want.TrainCount || got.ValCount != want.ValCount || got.TestCount != want.TestCount ||
				!close32(got.ValLossSum, want.ValLossSum, 1e-5) || want.ValCount == 0 {
				t.Fatalf("%s, %s features: workers' evaluation %+v, one process's %+v", model, in.name, got, want)
			}
		}
	}
}

// oneProcessEvaluation is one process's exact evaluation of cfg's
// untrained model on p.
func oneProcessEvaluation(t *testing.T, cfg train.Config, p train.Problem, opts minibatch.Options) train.Evaluation {
	t.Helper()
	ref, err := minibatch.New(cfg, p, unionSampler{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ev, err := ref.Evaluate(0)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// workersEvaluation is the sum of the parts' workers' evaluations of cfg's
// untrained model, their hidden layers rounded to bf16 if bf16.
func workersEvaluation(t *testing.T, cfg train.Config, parts []*partstore.Part, bf16 bool) train.Evaluation {
	t.Helper()
	evs := make([]train.Evaluation, len(parts))
	err := withTimeout(t, func() error {
		return comm.Run(len(parts), func(c comm.Communicator) error {
			s, err := New(c, cfg, parts[c.Rank()], "neighbor:2,2", 8)
			if err != nil {
				return err
			}
			s.eval.bf16 = bf16
			evs[c.Rank()], err = s.Evaluate(0)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum train.Evaluation
	for _, e := range evs {
		sum.TrainCorrect += e.TrainCorrect
		sum.TrainCount += e.TrainCount
		sum.ValCorrect += e.ValCorrect
		sum.ValCount += e.ValCount
		sum.TestCorrect += e.TestCorrect
		sum.TestCount += e.TestCount
		sum.ValLossSum += e.ValLossSum
	}
	return sum
}

// Fixed seeds give identical results regardless of GOMAXPROCS.
func TestSameAtAnyGOMAXPROCS(t *testing.T) {
	p := traintest.SBMProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 3))
	cfg := testConfig("gat")
	at := func(procs int) trace {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return runParts(t, cfg, parts, "neighbor:5,3", 16, 2)
	}
	want := at(1)
	for _, procs := range []int{2, 5} {
		got := at(procs)
		if !slices.Equal(got.losses, want.losses) || !slices.Equal(got.params, want.params) {
			t.Fatalf("GOMAXPROCS %d trains another model than GOMAXPROCS 1", procs)
		}
	}
}

// A worker whose part holds no node at all trains along with the others.
func TestEmptyPartTrains(t *testing.T) {
	p := traintest.SBMProblem(t, 200)
	assign := make([]int32, p.Graph.N)
	for v := range assign {
		assign[v] = int32(v % 2) // part 2 holds nothing
	}
	layout, err := partition.BuildLayout(p.Graph, assign, 3)
	if err != nil {
		t.Fatal(err)
	}
	parts := Parts(p, classes, layout)
	if len(parts[2].Part.Owned) != 0 {
		t.Fatalf("part 2 holds %d nodes", len(parts[2].Part.Owned))
	}
	cfg := testConfig("gcn")
	checkSame(t, "empty part", runParts(t, cfg, parts, "neighbor:3,3", 16, 2), runUnion(t, cfg, p, parts, []int{3, 3}, 16, 2))
	sp := p
	sp.Features = nn.NewFeatures(p.Features.Dense, nn.ForceSparse)
	sparts := Parts(sp, classes, layout)
	checkSame(t, "empty part, sparse features", runParts(t, cfg, sparts, "neighbor:3,3", 16, 2), runUnion(t, cfg, sp, sparts, []int{3, 3}, 16, 2))
}
