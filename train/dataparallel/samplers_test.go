package dataparallel

import (
	"testing"

	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
	"github.com/graft-gnn/graft/train/minibatch"
)

// runOneProcess trains in one process on the whole graph with the
// minibatch stepper and the sampler spec.
func runOneProcess(t *testing.T, cfg train.Config, p train.Problem, spec string, batch, epochs int) trace {
	t.Helper()
	agg, err := sample.AggregationOf(cfg.Model.Model)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sample.New(spec, sample.Config{Graph: p.Graph, Train: p.Train, BatchSize: batch, Layers: cfg.Model.Layers, Aggregation: agg, Seed: cfg.Model.Seed})
	if err != nil {
		t.Fatal(err)
	}
	s, err := minibatch.New(cfg, p, sm, minibatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loop, err := train.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := steps(loop, sm.Batches(), max(cfg.Accumulate, 1), epochs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// "With one worker, each sampler over parts equals the single-process
// sampler's run": the worker's one part is the whole graph, its clusters
// the whole graph's, its subgraphs and their normalisation one process's.
func TestOneWorkerEqualsOneProcessForEverySampler(t *testing.T) {
	p := sbmProblem(t, 300)
	parts := Parts(p, classes, randomLayout(t, p, 1))
	for _, spec := range []string{"cluster:6:2", "saint-rw:15:2", "saint-edge:30", "saint-node:60"} {
		for _, model := range []string{"gcn", "sage", "gat"} {
			t.Run(spec+"/"+model, func(t *testing.T) {
				cfg := testConfig(model)
				cfg.Accumulate = 2
				want := runOneProcess(t, cfg, p, spec, 16, 2)
				got := runParts(t, cfg, parts, spec, 16, 2)
				checkSame(t, spec+" "+model, got, want)
			})
		}
	}
}
