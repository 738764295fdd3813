package minibatch

import (
	"sync"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/train"
)

// BenchmarkStep times one optimiser step on a neighbour-sampled batch of
// GraphSAGE (the default mini-batch setting, scaled down to a 100k-node
// graph): sampling and gathering in the background, forward, backward and
// the step. It reports the batch's gathered bytes and flops, so that
// ns/op can be set beside the floor; graft bench train --sampler does the
// same for whole epochs on the ogbn-products-sized graph.
func BenchmarkStep(b *testing.B) {
	for _, model := range []string{"gcn", "sage", "gat"} {
		b.Run(model, func(b *testing.B) { benchmarkStep(b, model, "neighbor:15,10,5", 3) })
	}
	b.Run("sage/saint-rw", func(b *testing.B) { benchmarkStep(b, "sage", "saint-rw:1000:2", 3) })
	b.Run("sage/cluster", func(b *testing.B) { benchmarkStep(b, "sage", "cluster:200:4", 3) })
}

// benchProblem is the benchmarks' graph, made once.
var benchProblem = sync.OnceValues(func() (train.Problem, error) {
	const n = 100_000
	g, x, labels, err := graph.SBM(graph.SBMConfig{Nodes: n, Classes: benchClasses, AvgDegree: 20, Homophily: 0.8, Features: 100, FeatureNoise: 1}, 1)
	if err != nil {
		return train.Problem{}, err
	}
	p := train.Problem{Graph: g, Features: nn.DenseFeatures(x), Labels: labels}
	for v := int32(0); v < n; v += 10 {
		p.Train = append(p.Train, v)
	}
	return p, nil
})

const benchClasses = 16

func benchmarkStep(b *testing.B, model, spec string, layers int) {
	p, err := benchProblem()
	if err != nil {
		b.Fatal(err)
	}
	g, classes := p.Graph, benchClasses
	cfg := train.Config{Model: nn.Config{Model: model, Hidden: 128, Classes: classes, Layers: layers, Heads: 2, Dropout: 0.5, Seed: 1},
		Optimizer: nn.OptimizerConfig{Algorithm: nn.Adam, LR: 0.003}, Epochs: 1}
	agg, err := sample.AggregationOf(model)
	if err != nil {
		b.Fatal(err)
	}
	sampler, err := sample.New(spec, sample.Config{Graph: g, Train: p.Train, BatchSize: 512, Layers: layers, Aggregation: agg, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(cfg, p, sampler, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	loop, err := train.New(cfg, s)
	if err != nil {
		b.Fatal(err)
	}
	batches := s.Batches()
	for i := range min(batches, 3) { // warm-up: the buffers grow to their sizes
		if _, err := loop.Step(1, i); err != nil {
			b.Fatal(err)
		}
	}
	s.TakeStats()
	step := 0
	for b.Loop() {
		if _, err := loop.Step(2+step/batches, step%batches); err != nil {
			b.Fatal(err)
		}
		step++
	}
	st := s.TakeStats()
	b.ReportMetric(st.GatheredBytes/float64(step), "gathered-B/op")
	b.ReportMetric(st.Flops/float64(step), "flops/op")
	b.ReportMetric(100*(st.SampleSeconds+st.GatherSeconds)/b.Elapsed().Seconds(), "sample+gather-%")
}
