package sample

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/partition"
	"github.com/graft-gnn/graft/tensor"
)

func newTestCluster(t testing.TB, spec string, cfg Config) *Cluster {
	t.Helper()
	s, err := New(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Cluster)
}

// clusterOf returns each node's cluster, as the sampler cut the graph.
func clusterOf(s *Cluster) []int {
	of := make([]int, len(s.nodes))
	for c := range len(s.start) - 1 {
		for _, v := range s.nodes[s.start[c]:s.start[c+1]] {
			of[v] = c
		}
	}
	return of
}

// withSomeSelfLoops returns g with a self loop at every fifth node.
func withSomeSelfLoops(t *testing.T, g *graph.Graph) *graph.Graph {
	t.Helper()
	var src, dst []int32
	for v := range g.N {
		for _, u := range g.Adj(v) {
			src, dst = append(src, int32(v)), append(dst, u)
		}
		if v%5 == 0 {
			src, dst = append(src, int32(v)), append(dst, int32(v))
		}
	}
	h, err := graph.FromEdges(g.N, src, dst, graph.BuildOptions{SelfLoops: graph.KeepSelfLoops})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// An epoch deals every cluster into exactly one batch, batches hold whole
// clusters, at most PER_BATCH of them, so every node is in exactly one
// batch, and the loss rows are all the batch's training nodes.
func TestClusterEpochVisitsEveryClusterOnce(t *testing.T) {
	g, _, _ := testGraph(t, 600, 12)
	for _, agg := range []Aggregation{GCN, Mean, Attention} {
		cfg := testConfig(g, agg, 3, 1)
		s := newTestCluster(t, "cluster:12:5", cfg)
		if s.Batches() != 3 {
			t.Fatalf("12 clusters, 5 a batch: %d batches, want 3", s.Batches())
		}
		sorted := slices.Clone(s.nodes)
		slices.Sort(sorted)
		for i, v := range sorted {
			if int(v) != i {
				t.Fatal("the clusters do not partition the nodes")
			}
		}
		of := clusterOf(s)
		for epoch := 1; epoch <= 2; epoch++ {
			batchOf := make([]int, g.N)
			clusterIn := map[int]int{}
			var b Batch
			for i := range s.Batches() {
				if err := s.Sample(epoch, i, &b); err != nil {
					t.Fatal(err)
				}
				checkBatch(t, g, cfg.Train, &b)
				if blk := b.Blocks[0]; len(b.Blocks) != 1 || blk.NumDst != blk.NumSrc {
					t.Fatalf("%d blocks, the first %d destinations of %d sources; want one block of the subgraph", len(b.Blocks), blk.NumDst, blk.NumSrc)
				}
				clusters := map[int]int{}
				for _, v := range b.Output {
					if batchOf[v] != 0 {
						t.Fatalf("epoch %d: node %d in batches %d and %d", epoch, v, batchOf[v]-1, i)
					}
					batchOf[v] = i + 1
					clusters[of[v]]++
				}
				if len(clusters) > 5 {
					t.Fatalf("batch %d holds %d clusters", i, len(clusters))
				}
				for c, k := range clusters {
					if k != s.start[c+1]-s.start[c] {
						t.Fatalf("batch %d holds %d of cluster %d's %d nodes", i, k, c, s.start[c+1]-s.start[c])
					}
					if j, dup := clusterIn[c]; dup {
						t.Fatalf("epoch %d: cluster %d in batches %d and %d", epoch, c, j, i)
					}
					clusterIn[c] = i
				}
				var loss []int32
				for r, v := range b.Output {
					if v%3 == 0 { // testConfig's training nodes
						loss = append(loss, int32(r))
					}
				}
				if !slices.Equal(b.Loss, loss) || b.Weight != nil {
					t.Fatalf("batch %d: loss rows %v weighted %v, want the training nodes %v unweighted", i, b.Loss, b.Weight, loss)
				}
			}
			if len(clusterIn) != 12 || slices.Contains(batchOf, 0) {
				t.Fatalf("epoch %d visits %d of 12 clusters, and not every node", epoch, len(clusterIn))
			}
			if s.Sample(epoch, s.Batches(), &b) == nil || s.Sample(epoch, -1, &b) == nil {
				t.Fatal("a batch outside the epoch sampled")
			}
		}
	}
}

var aggName = map[Aggregation]string{GCN: "gcn", Mean: "mean", Attention: "attention"}

// globalEntries returns a block's operator by global ids: (row, column) to
// value, values 1 for a pattern.
func globalEntries(op *tensor.CSR, rowID, colID func(int) int32) map[[2]int32]float32 {
	m := map[[2]int32]float32{}
	for r := range op.Rows {
		for p := op.Offsets[r]; p < op.Offsets[r+1]; p++ {
			v := float32(1)
			if op.Values != nil {
				v = op.Values[p]
			}
			m[[2]int32{rowID(r), colID(int(op.Indices[p]))}] = v
		}
	}
	return m
}

// referenceOperator is the operator agg reads, computed by the graph
// package on g.
func referenceOperator(g *graph.Graph, agg Aggregation) *tensor.CSR {
	switch agg {
	case GCN:
		return g.GCNNorm()
	case Mean:
		return g.MeanNorm()
	}
	return g.WithSelfLoops().Matrix(nil)
}

// checkInduced checks that b's one block is the subgraph of g induced by
// its nodes, normalised as a graph of its own (graph.GCNNorm, MeanNorm, or
// the pattern with self loops), value for value.
func checkInduced(t *testing.T, g *graph.Graph, agg Aggregation, b *Batch) {
	t.Helper()
	sub, _, _, err := g.InducedSubgraph(b.Output)
	if err != nil {
		t.Fatal(err)
	}
	id := func(i int) int32 { return b.Output[i] }
	got := globalEntries(blockOperator(b.Blocks[0]), id, id)
	want := globalEntries(referenceOperator(sub, agg), id, id)
	if len(got) != len(want) {
		t.Fatalf("%s: the batch has %d entries, its induced subgraph %d", aggName[agg], len(got), len(want))
	}
	for e, w := range want {
		if v, ok := got[e]; !ok || v != w {
			t.Fatalf("%s: entry (%d, %d) is %v (present %v), the induced subgraph's %v", aggName[agg], e[0], e[1], v, ok, w)
		}
	}
}

// A batch is the subgraph its clusters' nodes induce: every edge of the
// graph between two of its nodes, those between clusters restored, and no
// other, with the subgraph's own normalisation; on graphs with and without
// self loops.
func TestClusterIsTheInducedSubgraph(t *testing.T) {
	g0, _, _ := testGraph(t, 600, 12)
	for _, g := range []*graph.Graph{g0, withSomeSelfLoops(t, g0)} {
		for _, agg := range []Aggregation{GCN, Mean, Attention} {
			s := newTestCluster(t, "cluster:12:4", testConfig(g, agg, 2, 1))
			of := clusterOf(s)
			restored := 0
			var b Batch
			for i := range s.Batches() {
				if err := s.Sample(3, i, &b); err != nil {
					t.Fatal(err)
				}
				checkInduced(t, g, agg, &b)
				op := blockOperator(b.Blocks[0])
				for r := range op.Rows {
					for _, c := range op.Indices[op.Offsets[r]:op.Offsets[r+1]] {
						if of[b.Output[r]] != of[b.Output[c]] {
							restored++
						}
					}
				}
			}
			if restored == 0 {
				t.Fatalf("%s: no batch holds an edge between two of its clusters", aggName[agg])
			}
		}
	}
}

// With every cluster in the batch, the batch is the whole graph: its
// operator is the whole graph's, entry for entry, and a model's logits on
// it are its whole-graph logits.
func TestClusterOfEveryClusterIsTheWholeGraph(t *testing.T) {
	g, x, _ := testGraph(t, 400, 8)
	for _, model := range []string{"gcn", "sage", "gat"} {
		agg, _ := AggregationOf(model)
		s := newTestCluster(t, "cluster:6:6", testConfig(g, agg, 2, 1))
		var b Batch
		if s.Batches() != 1 {
			t.Fatalf("%d batches, want 1", s.Batches())
		}
		if err := s.Sample(1, 0, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Output) != g.N {
			t.Fatalf("the batch holds %d of %d nodes", len(b.Output), g.N)
		}
		id := func(i int) int32 { return b.Output[i] }
		got := globalEntries(blockOperator(b.Blocks[0]), id, id)
		want := globalEntries(referenceOperator(g, agg), func(i int) int32 { return int32(i) }, func(i int) int32 { return int32(i) })
		if !maps.Equal(got, want) {
			t.Fatalf("%s: the batch's operator is not the whole graph's", model)
		}
		checkWholeGraphLogits(t, model, g, x, &b)
	}
}

// "Every sampler is deterministic": the partition and every batch depend
// only on (seed, epoch, batch index), never on the number of threads.
func TestClusterIsDeterministic(t *testing.T) {
	g, _, _ := testGraph(t, 3000, 20)
	cfg := testConfig(g, GCN, 2, 1)
	sample := func(epoch, index int) string {
		s := newTestCluster(t, "cluster:30:4", cfg)
		var b Batch
		if err := s.Sample(epoch, index, &b); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(s.nodes, s.start) + batchString(&b)
	}
	checkBatchesDeterministic(t, sample)
	want := sample(3, 2)
	cfg.Seed++
	if sample(3, 2) == want {
		t.Fatal("another seed gives the same batch")
	}
}

// Batches sampled at once, from goroutines of their own, are those sampled
// one after another.
func TestClusterSamplesConcurrently(t *testing.T) {
	g, _, _ := testGraph(t, 1000, 10)
	s := newTestCluster(t, "cluster:20:3", testConfig(g, Mean, 2, 1))
	want := make([]string, s.Batches())
	var b Batch
	for i := range want {
		if err := s.Sample(5, i, &b); err != nil {
			t.Fatal(err)
		}
		want[i] = batchString(&b)
	}
	got := make([]string, len(want))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			var b Batch
			if err := s.Sample(5, i, &b); err == nil {
				got[i] = batchString(&b)
			}
		})
	}
	wg.Wait()
	if !slices.Equal(got, want) {
		t.Fatal("batches sampled at once differ from those sampled in turn")
	}
}

// The partitioner balances the training nodes across clusters too, even
// when they are all in one region of the graph; another method is chosen
// by name.
func TestClusterBalancesTrainingNodes(t *testing.T) {
	g, _, _ := testGraph(t, 2000, 10)
	cfg := testConfig(g, GCN, 2, 1)
	cfg.Train = nil
	for v := range int32(400) {
		cfg.Train = append(cfg.Train, v)
	}
	const parts = 16
	bound := partition.Bound(int64(len(cfg.Train)), 1, parts, partition.DefaultImbalance)
	var clusters []string
	for _, method := range []string{"multilevel", "random", "stream"} {
		s := newTestCluster(t, fmt.Sprintf("cluster:%d:3:%s", parts, method), cfg)
		for c := range parts {
			k := 0
			for _, v := range s.nodes[s.start[c]:s.start[c+1]] {
				if v < 400 {
					k++
				}
			}
			if int64(k) > bound {
				t.Errorf("%s: cluster %d holds %d training nodes, above the bound %d", method, c, k, bound)
			}
		}
		clusters = append(clusters, fmt.Sprint(s.nodes))
	}
	if clusters[0] == clusters[1] || clusters[1] == clusters[2] {
		t.Fatal("the method does not choose the partitioner")
	}
}

// Once its storage has grown, a batch is sampled with one allocation.
func TestClusterReusesTheBatch(t *testing.T) {
	g, _, _ := testGraph(t, 3000, 20)
	s := newTestCluster(t, "cluster:30:4", testConfig(g, GCN, 2, 1))
	var b Batch
	for i := range s.Batches() {
		if err := s.Sample(1, i, &b); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Sample(1, i%s.Batches(), &b); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs > 1 { // the task of the parallel loops
		t.Fatalf("%v allocations per batch", allocs)
	}
}

func TestClusterSpecErrors(t *testing.T) {
	g, _, _ := testGraph(t, 100, 5)
	cfg := testConfig(g, Mean, 2, 10)
	for _, spec := range []string{"cluster:", "cluster:5", "cluster:0:1", "cluster:-1:1", "cluster:5:0", "cluster:5:6", "cluster:101:1",
		"cluster:a:2", "cluster:5:b", "cluster:5:2:nope", "cluster:5:2:multilevel:x", "cluster:5:-1"} {
		if _, err := New(spec, cfg); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
	for _, spec := range []string{"cluster:100:100", "cluster:1:1", "cluster:5:2:random", "cluster:7:3:stream"} {
		if _, err := New(spec, cfg); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// BenchmarkCluster times Cluster-GCN on a stochastic block model of 200,000
// nodes of average degree 20 (the graph of dataset sbm:200000:20:F:10), 10%
// of them training nodes, cut into 1500 clusters, 20 a batch: the
// partitioning once, then the batches of GCN.
func BenchmarkCluster(b *testing.B) {
	g, _, _, err := graph.SBM(graph.SBMConfig{Nodes: 200000, Classes: 10, AvgDegree: 20, Homophily: 0.8}, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Graph: g, BatchSize: 1, Layers: 2, Aggregation: GCN, Seed: 1}
	for v := int32(0); int(v) < g.N; v += 10 {
		cfg.Train = append(cfg.Train, v)
	}
	start := time.Now()
	s := newTestCluster(b, "cluster:1500:20", cfg)
	partitioned := time.Since(start)
	var batch Batch
	nodes, entries, i := 0, 0, 0
	for ; b.Loop(); i++ {
		if err := s.Sample(1+i/s.Batches(), i%s.Batches(), &batch); err != nil {
			b.Fatal(err)
		}
		nodes += len(batch.Output)
		entries += blockOperator(batch.Blocks[0]).NNZ()
	}
	b.ReportMetric(partitioned.Seconds(), "partition-s")
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "batches/s")
	b.ReportMetric(float64(nodes)/float64(i), "nodes/batch")
	b.ReportMetric(float64(entries)/float64(i), "entries/batch")
}
