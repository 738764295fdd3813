package minibatch

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/internal/sysstat"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/sample"
	"github.com/graft-gnn/graft/tensor"
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
		for _, prec := range []string{"fp32", "bf16-features", "bf16"} {
			b.Run(model+"/"+prec, func(b *testing.B) { benchmarkStep(b, model, "neighbor:15,10,5", 3, prec) })
		}
	}
	b.Run("sage/saint-rw", func(b *testing.B) { benchmarkStep(b, "sage", "saint-rw:1000:2", 3, "fp32") })
	b.Run("sage/cluster", func(b *testing.B) { benchmarkStep(b, "sage", "cluster:200:4", 3, "fp32") })
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

// benchmarkStep's precision is fp32, bf16 (--precision bf16: bf16
// features and products), or bf16-features (bf16 features, float32
// products), which sets what the bf16 products save beside bf16.
func benchmarkStep(b *testing.B, model, spec string, layers int, precision string) {
	p, err := benchProblem()
	if err != nil {
		b.Fatal(err)
	}
	prec := train.FP32
	if precision != "fp32" {
		p, prec = p.WithBF16Features(), train.BF16
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
	s, err := New(cfg, p, sampler, Options{Precision: prec})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if precision == "bf16-features" {
		s.Model().SetProducts(tensor.FP32Products)
	}
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

// BenchmarkBatchInput samples a batch (neighbour sampler, fanouts 15,10,5,
// 1024 seeds) on a graph of ogbn-products' shape (2.4M nodes, average
// degree 52, 100 features) and gathers its input rows, with the graph and
// features on 4 KiB pages or on huge pages (dataset.Load's): the work
// that runs ahead of the model. It reports each part's milliseconds a
// batch; -cpu 1 times one thread.
func BenchmarkBatchInput(b *testing.B) {
	for _, huge := range []bool{false, true} {
		b.Run(map[bool]string{false: "pages=4KiB", true: "pages=2MiB"}[huge], func(b *testing.B) {
			s, x := productsSampler(b, huge)
			var batch sample.Batch
			var gat gatherer
			if err := s.Sample(1, 0, &batch); err != nil { // buffers grow to their sizes
				b.Fatal(err)
			}
			gat.gather(nn.DenseFeatures(x), batch.Input)
			var sampling, gathering time.Duration
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := s.Sample(2, i%s.Batches(), &batch); err != nil {
					b.Fatal(err)
				}
				sampled := time.Now()
				gat.gather(nn.DenseFeatures(x), batch.Input)
				sampling += sampled.Sub(start)
				gathering += time.Since(sampled)
			}
			b.ReportMetric(sampling.Seconds()*1e3/float64(b.N), "sample-ms")
			b.ReportMetric(gathering.Seconds()*1e3/float64(b.N), "gather-ms")
		})
	}
}

// BenchmarkGatherGroups gathers the input rows of products-shaped
// batches (huge pages) with the prefetch groups of AMD's cores (12 KiB)
// and of Intel's (2560 B), alternating the two batch by batch so that a
// shared machine's load falls on both: each one's mean milliseconds a
// batch, and the ratio of their process CPU times (12 KiB over 2560 B).
func BenchmarkGatherGroups(b *testing.B) {
	s, x := productsSampler(b, true)
	batches := make([]sample.Batch, 4)
	for i := range batches {
		if err := s.Sample(1, i, &batches[i]); err != nil {
			b.Fatal(err)
		}
	}
	saved := gatherGroupBytes
	defer func() { gatherGroupBytes = saved }()
	sizes := []int{12 << 10, 2560}
	var gat gatherer
	var wall, cpu [2]time.Duration
	for i := 0; b.Loop(); i++ {
		for k, size := range sizes {
			gatherGroupBytes = size
			c0, t0 := sysstat.CPUTime(), time.Now()
			gat.gather(nn.DenseFeatures(x), batches[i%len(batches)].Input)
			wall[k] += time.Since(t0)
			cpu[k] += sysstat.CPUTime() - c0
		}
	}
	b.ReportMetric(wall[0].Seconds()*1e3/float64(b.N), "12KiB-ms")
	b.ReportMetric(wall[1].Seconds()*1e3/float64(b.N), "2560B-ms")
	if cpu[1] > 0 {
		b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "cpu-ratio")
	}
}

// productsSampler is the neighbour sampler (fanouts 15,10,5, 1024 seeds,
// every tenth node a seed) over productsShaped's graph, and its features.
func productsSampler(b *testing.B, huge bool) (*sample.Neighbor, *tensor.Matrix) {
	g, x, err := productsShaped(huge)
	if err != nil {
		b.Fatal(err)
	}
	var seeds []int32
	for v := int32(0); int(v) < g.N; v += 10 {
		seeds = append(seeds, v)
	}
	return sample.NewNeighbor(sample.Config{Graph: g, Train: seeds, BatchSize: 1024, Layers: 3, Aggregation: sample.Mean, Seed: 1}, []int{15, 10, 5}), x
}

// productsShaped is BenchmarkBatchInput's graph and features, made once
// and copied to either kind of pages.
func productsShaped(huge bool) (*graph.Graph, *tensor.Matrix, error) {
	g, err := productsGraph()
	if err != nil {
		return nil, nil, err
	}
	h := &graph.Graph{N: g.N, Offsets: slices.Clone(g.Offsets), Neighbors: slices.Clone(g.Neighbors)}
	x := &tensor.Matrix{Rows: g.N, Cols: 100, Data: make([]float32, g.N*100)}
	for i := range x.Data {
		x.Data[i] = float32(i % 977)
	}
	if huge {
		hugepage.Collapse(h.Offsets)
		hugepage.Collapse(h.Neighbors)
		hugepage.Collapse(x.Data)
	}
	return h, x, nil
}

var productsGraph = sync.OnceValues(func() (*graph.Graph, error) {
	g, _, _, err := graph.SBM(graph.SBMConfig{Nodes: 2_400_000, Classes: 47, AvgDegree: 52, Homophily: 0.8}, 1)
	return g, err
})
