package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

func testGraph(t testing.TB, n int, deg float64) (*graph.Graph, *tensor.Matrix, []int32) {
	t.Helper()
	g, x, labels, err := graph.SBM(graph.SBMConfig{Nodes: n, Classes: 3, AvgDegree: deg, Homophily: 0.7, Features: 6, FeatureNoise: 1}, 5)
	if err != nil {
		t.Fatal(err)
	}
	return g, x, labels
}

func testConfig(g *graph.Graph, agg Aggregation, layers, batch int) Config {
	var train []int32
	for v := int32(0); int(v) < g.N; v += 3 {
		train = append(train, v)
	}
	return Config{Graph: g, Train: train, BatchSize: batch, Layers: layers, Aggregation: agg, Seed: 11}
}

// checkBatch checks what every sampler's batch must satisfy: blocks chain
// (each one's destinations the next one's sources, destinations first),
// every entry is an edge of the graph or a destination's self loop, the
// input and output rows are the first block's sources and the last
// block's destinations, and the loss rows are training nodes.
func checkBatch(t *testing.T, g *graph.Graph, train []int32, b *Batch) {
	t.Helper()
	isTrain := map[int32]bool{}
	for _, v := range train {
		isTrain[v] = true
	}
	for l, blk := range b.Blocks {
		ids := blk.SrcIDs
		if len(ids) != blk.NumSrc || blk.NumDst > blk.NumSrc {
			t.Fatalf("block %d: %d ids for %d sources, %d destinations", l, len(ids), blk.NumSrc, blk.NumDst)
		}
		if l+1 < len(b.Blocks) && !slices.Equal(b.Blocks[l+1].SrcIDs, ids[:blk.NumDst]) {
			t.Fatalf("block %d's destinations are not block %d's sources", l, l+1)
		}
		seen := map[int32]bool{}
		for _, v := range ids {
			if seen[v] {
				t.Fatalf("block %d lists node %d twice among its sources", l, v)
			}
			seen[v] = true
		}
		op := blockOperator(blk)
		for i := range blk.NumDst {
			v := ids[i]
			row := op.Indices[op.Offsets[i]:op.Offsets[i+1]]
			for _, c := range row {
				u := ids[c]
				if u != v {
					if _, ok := slices.BinarySearch(g.Adj(int(v)), u); !ok {
						t.Fatalf("block %d: entry (%d, %d) is not an edge", l, v, u)
					}
				}
			}
		}
	}
	if !slices.Equal(b.Input, b.Blocks[0].SrcIDs) || !slices.Equal(b.Output, b.Blocks[len(b.Blocks)-1].SrcIDs[:b.Blocks[len(b.Blocks)-1].NumDst]) {
		t.Fatal("input and output rows are not the first block's sources and the last block's destinations")
	}
	for _, r := range b.Loss {
		if !isTrain[b.Output[r]] {
			t.Fatalf("loss row %d is node %d, not a training node", r, b.Output[r])
		}
	}
}

// blockOperator is the operator a sampled block was made with.
func blockOperator(b *nn.Block) *tensor.CSR {
	ops := b.Operators()
	switch {
	case ops.GCN != nil:
		return ops.GCN
	case ops.Mean != nil:
		return ops.Mean
	}
	return ops.Loops
}

// Fanouts bound every row, sampling is without replacement, and an epoch
// deals every training node as a seed exactly once.
func TestNeighborBlocks(t *testing.T) {
	g, _, _ := testGraph(t, 600, 12)
	for _, agg := range []Aggregation{GCN, Mean, Attention} {
		sampleEpoch(t, "neighbor:5,3,2", testConfig(g, agg, 3, 37), func(b *Batch) {
			for l, blk := range b.Blocks {
				fanout := []int{2, 3, 5}[l]
				op := blockOperator(blk)
				for r := range blk.NumDst {
					n := int(op.Offsets[r+1] - op.Offsets[r])
					if agg != Mean {
						n-- // the self loop
					}
					if n > fanout || n > len(g.Adj(int(blk.SrcIDs[r]))) {
						t.Fatalf("%v: layer %d keeps %d neighbours with fanout %d", agg, l, n, fanout)
					}
				}
			}
		})
	}
}

// sampleEpoch samples every batch of an epoch of the sampler spec for cfg,
// checks each (checkBatch) and hands it to visit, and checks that the
// epoch deals every training node as a seed exactly once.
func sampleEpoch(t *testing.T, spec string, cfg Config, visit func(b *Batch)) {
	t.Helper()
	s, err := New(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[int32]int{}
	var b Batch
	for i := range s.Batches() {
		if err := s.Sample(2, i, &b); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, cfg.Graph, cfg.Train, &b)
		for _, v := range b.Output {
			seeds[v]++
		}
		visit(&b)
	}
	if len(seeds) != len(cfg.Train) {
		t.Fatalf("%s: an epoch dealt %d distinct seeds of %d training nodes", spec, len(seeds), len(cfg.Train))
	}
	for v, c := range seeds {
		if c != 1 {
			t.Fatalf("%s: seed %d dealt %d times in an epoch", spec, v, c)
		}
	}
}

// "Every sampler is deterministic: a batch depends only on (seed, epoch,
// batch index), never on thread count or timing."
func TestNeighborIsDeterministic(t *testing.T) {
	g, _, _ := testGraph(t, 3000, 20)
	checkDeterministic(t, "neighbor:10,25", testConfig(g, GCN, 2, 256))
}

// checkDeterministic checks that the sampler spec makes for cfg the same
// batch at GOMAXPROCS 1, 2 and 7, and another for another epoch or batch.
func checkDeterministic(t *testing.T, spec string, cfg Config) {
	t.Helper()
	checkBatchesDeterministic(t, func(epoch, index int) string {
		s, err := New(spec, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b Batch
		if err := s.Sample(epoch, index, &b); err != nil {
			t.Fatal(err)
		}
		return batchString(&b)
	})
}

// checkBatchesDeterministic checks that sample(epoch, index), a batch
// written out, is the same at GOMAXPROCS 1, 2 and 7, and differs for
// another epoch or index.
func checkBatchesDeterministic(t *testing.T, sample func(epoch, index int) string) {
	t.Helper()
	at := func(procs, epoch, index int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return sample(epoch, index)
	}
	want := at(1, 3, 2)
	for _, procs := range []int{2, 7} {
		if at(procs, 3, 2) != want {
			t.Fatalf("GOMAXPROCS %d samples another batch", procs)
		}
	}
	if at(2, 4, 2) == want || at(2, 3, 1) == want {
		t.Fatal("another epoch or batch index gives the same batch")
	}
}

// batchString writes out a batch: its rows and its blocks' operators.
func batchString(b *Batch) string {
	out := fmt.Sprint(b.Input, b.Output, b.Loss, b.Weight)
	for _, blk := range b.Blocks {
		op := blockOperator(blk)
		out += fmt.Sprint(op.Offsets, op.Indices, op.Values)
	}
	return out
}

// A sampled GCN row is an unbiased estimate of the full row: averaged over
// many batches, the sampled operator applied to fixed features converges to
// the whole graph's (to within five standard errors, see meanDeviation).
func TestNeighborGCNIsUnbiased(t *testing.T) {
	g, x, _ := testGraph(t, 300, 30)
	cfg := testConfig(g, GCN, 1, 1)
	cfg.Train = []int32{7}
	if worst, at := meanDeviation(t, NewNeighbor(cfg, []int{4}), g.GCNNorm(), x, 20000); worst > 5 {
		t.Fatal(at)
	}
}

// meanDeviation samples batch 0 of epochs 1..draws from s, a sampler of
// one layer whose batches all have the same destinations, and returns the
// largest deviation of the mean of a destination's sampled row times x
// from full's row times x, in standard errors of the mean beyond 1e-5, and
// a description of it.
func meanDeviation(t *testing.T, s Sampler, full *tensor.CSR, x *tensor.Matrix, draws int) (worst float64, at string) {
	t.Helper()
	sum, sq := map[int32][]float64{}, map[int32][]float64{}
	est := make([]float64, x.Cols)
	var b Batch
	for e := range draws {
		if err := s.Sample(e+1, 0, &b); err != nil {
			t.Fatal(err)
		}
		op := blockOperator(b.Blocks[0])
		for i, v := range b.Output {
			clear(est)
			for p := op.Offsets[i]; p < op.Offsets[i+1]; p++ {
				for c := range x.Cols {
					est[c] += float64(op.Value(p)) * float64(x.At(int(b.Input[op.Indices[p]]), c))
				}
			}
			if sum[v] == nil {
				sum[v], sq[v] = make([]float64, x.Cols), make([]float64, x.Cols)
			}
			for c, y := range est {
				sum[v][c] += y
				sq[v][c] += y * y
			}
		}
	}
	worst = -1
	maxSE := 0.0
	for v := range sum {
		for c := range x.Cols {
			want := 0.0
			for p := full.Offsets[v]; p < full.Offsets[v+1]; p++ {
				want += float64(full.Value(p)) * float64(x.At(int(full.Indices[p]), c))
			}
			n := float64(draws)
			mean := sum[v][c] / n
			se := math.Sqrt(max(0, sq[v][c]/n-mean*mean) / (n - 1))
			dev := math.Max(0, math.Abs(mean-want)-1e-5) / se // 0/0 when exact
			if math.IsNaN(dev) {
				dev = 0
			}
			if dev > worst {
				worst = dev
				at = fmt.Sprintf("largest deviation %.2f standard errors, node %d feature %d: sampled rows average %.5f, the full row gives %.5f (standard error %.5f)", dev, v, c, mean, want, se)
			}
			maxSE = max(maxSE, se)
		}
	}
	return worst, fmt.Sprintf("%s; largest standard error %.4f", at, maxSE)
}

// With every fanout -1 the blocks are the full neighbourhoods: the model's
// logits for the seeds are the whole graph's.
func TestNeighborKeepingEveryNeighbourIsTheWholeGraph(t *testing.T) {
	g, x, _ := testGraph(t, 400, 8)
	for _, model := range []string{"gcn", "sage", "gat"} {
		agg, _ := AggregationOf(model)
		cfg := testConfig(g, agg, 2, 50)
		s, err := New("neighbor:-1,-1", cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b Batch
		if err := s.Sample(1, 1, &b); err != nil {
			t.Fatal(err)
		}
		checkWholeGraphLogits(t, model, g, x, &b)
	}
}

// checkWholeGraphLogits checks that a 2-layer model of kind model gives,
// on b's blocks, the logits it gives b's output rows on the whole graph.
func checkWholeGraphLogits(t *testing.T, model string, g *graph.Graph, x *tensor.Matrix, b *Batch) {
	t.Helper()
	mc := nn.Config{Model: model, InFeatures: x.Cols, Hidden: 5, Classes: 3, Layers: 2, Heads: 2, Seed: 3}
	m, _ := nn.NewModel(mc)
	want := m.Forward([]*nn.Block{nn.WholeGraph(g)}, nn.DenseFeatures(x), false).Clone()
	got := m.Forward(b.Blocks, nn.DenseFeatures(x.SelectRows(b.Input)), false)
	for i, v := range b.Output {
		for c := range 3 {
			if a, w := got.At(i, c), want.At(int(v), c); math.Abs(float64(a-w)) > 1e-5*(1+math.Abs(float64(w))) {
				t.Fatalf("%s: node %d class %d: %v on the batch, %v on the whole graph", model, v, c, a, w)
			}
		}
	}
}

func TestNeighborSpecErrors(t *testing.T) {
	g, _, _ := testGraph(t, 100, 5)
	checkSpecErrors(t, testConfig(g, Mean, 2, 10), "neighbor:5", "neighbor:5,0", "neighbor:a,b", "neighbor:5,-2", "nope:1", "neighbor:1,2,3")
}

// checkSpecErrors checks that New refuses every spec for cfg.
func checkSpecErrors(t *testing.T, cfg Config, specs ...string) {
	t.Helper()
	for _, spec := range specs {
		if _, err := New(spec, cfg); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
}

// checkLayerwise runs the tests every layer-wise sampler passes, for
// kind (fastgcn, ladies), whose one-layer sampler of size draws
// newSampler makes: checkLayerwiseBlocks, checkDeterministic and
// checkLayerwiseUnbiased.
func checkLayerwise(t *testing.T, kind string, newSampler func(cfg Config, size int) Sampler) {
	t.Run("blocks", func(t *testing.T) { checkLayerwiseBlocks(t, kind+":40,30,20") })
	t.Run("deterministic", func(t *testing.T) {
		g, _, _ := testGraph(t, 3000, 20)
		checkDeterministic(t, kind+":200,400", testConfig(g, GCN, 2, 256))
	})
	t.Run("unbiased", func(t *testing.T) { checkLayerwiseUnbiased(t, newSampler) })
}

// checkLayerwiseBlocks checks the batches of an epoch of a layer-wise
// sampler's spec (KIND:N1,N2,...) for every aggregation: valid
// (checkBatch), every source beyond the destinations drawn and read by some
// row, at most sizes[i] of them in the i-th block below the seeds and in
// any row (its self loop aside), some drawn in every block, and every
// training node a seed once.
func checkLayerwiseBlocks(t *testing.T, spec string) {
	t.Helper()
	g, _, _ := testGraph(t, 600, 12)
	_, args, _ := strings.Cut(spec, ":")
	sizes, err := parseSizes(args, strings.Count(args, ",")+1)
	if err != nil {
		t.Fatal(err)
	}
	for _, agg := range []Aggregation{GCN, Mean, Attention} {
		drawnAt := make([]int, len(sizes)) // per block: sources drawn over the epoch
		sampleEpoch(t, spec, testConfig(g, agg, len(sizes), 37), func(b *Batch) {
			for l, blk := range b.Blocks {
				size := sizes[len(sizes)-1-l]
				drawn := blk.NumSrc - blk.NumDst
				drawnAt[l] += drawn
				if drawn > size {
					t.Fatalf("%s %s: block %d has %d sources beyond its destinations, of %d draws", spec, aggNames[agg], l, drawn, size)
				}
				op := blockOperator(blk)
				read := make([]bool, blk.NumSrc)
				for r := range blk.NumDst {
					row := op.Indices[op.Offsets[r]:op.Offsets[r+1]]
					n := len(row)
					if agg != Mean {
						if row[0] != int32(r) {
							t.Fatalf("%s %s: block %d row %d does not start with its self loop", spec, aggNames[agg], l, r)
						}
						n--
					}
					if n > size {
						t.Fatalf("%s %s: block %d row %d keeps %d drawn nodes of %d draws", spec, aggNames[agg], l, r, n, size)
					}
					for _, c := range row {
						read[c] = true
					}
				}
				if i := slices.Index(read[blk.NumDst:], false); i >= 0 {
					t.Fatalf("%s %s: block %d's source %d is read by no destination", spec, aggNames[agg], l, blk.NumDst+i)
				}
			}
		})
		if slices.Contains(drawnAt, 0) {
			t.Fatalf("%s %s: sources drawn per block over an epoch: %v", spec, aggNames[agg], drawnAt)
		}
	}
}

// directedTestGraph is a directed graph of 200 nodes: 12 random
// out-neighbours each, a self loop on every tenth node, node 1 a hub of
// 150 neighbours and node 2 without any; and 4 random features per node.
func directedTestGraph(t testing.TB) (*graph.Graph, *tensor.Matrix) {
	t.Helper()
	const n = 200
	r := rand.New(rand.NewPCG(3, 4))
	var src, dst []int32
	for v := range int32(n) {
		k := 12
		switch {
		case v == 1:
			k = 150
		case v == 2:
			k = 0
		case v%10 == 0:
			src, dst = append(src, v), append(dst, v)
		}
		for range k {
			src, dst = append(src, v), append(dst, int32(r.IntN(n)))
		}
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{SelfLoops: graph.KeepSelfLoops})
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.New(n, 4)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	return g, x
}

// checkLayerwiseUnbiased checks "the mean over many samples of a sampled
// layer's output converges to the full layer's": for fixed destinations
// and features X, the mean over 20,000 one-layer batches of the sampled
// operator times X at its sources is the full operator's Â·X (GCN) or
// mean (SAGE), on an undirected graph and on a directed one with self
// loops, a hub and an empty row, with few draws (rows mostly searched for
// the drawn nodes) and more (rows scanned). The tolerance is five Monte
// Carlo standard errors of the mean, estimated from the same batches, plus
// 1e-5 for float32 rounding: of the 240 comparisons (8 cases of 6 nodes
// and 6 or 4 features), one beyond five standard errors has a chance near
// 10⁻⁴ were the means normal (they are means of 20,000 draws of a bounded
// estimate).
func checkLayerwiseUnbiased(t *testing.T, newSampler func(cfg Config, size int) Sampler) {
	t.Helper()
	forUnbiasedCases(t, newSampler, func(name string, worst float64, at string) {
		if worst > 5 {
			t.Errorf("%s: %s", name, at)
		}
	})
}

// forUnbiasedCases runs the cases of checkLayerwiseUnbiased, handing each
// one's largest deviation from the full operator (in standard errors,
// beyond 1e-5) and where it is to check.
func forUnbiasedCases(t *testing.T, newSampler func(cfg Config, size int) Sampler, check func(name string, worst float64, at string)) {
	t.Helper()
	sbm, sbmX, _ := testGraph(t, 300, 30)
	dir, dirX := directedTestGraph(t)
	for _, c := range []struct {
		name  string
		g     *graph.Graph
		x     *tensor.Matrix
		dests []int32
	}{
		{"sbm", sbm, sbmX, []int32{7, 8, 100, 150, 200, 299}},
		{"directed", dir, dirX, []int32{0, 1, 2, 3, 10, 20}},
	} {
		for _, agg := range []Aggregation{GCN, Mean} {
			full := fullOperator(c.g, agg)
			for _, size := range []int{3, 40} {
				cfg := Config{Graph: c.g, Train: c.dests, BatchSize: len(c.dests), Layers: 1, Aggregation: agg, Seed: 11}
				name := fmt.Sprintf("%s %s, %d draws", c.name, aggNames[agg], size)
				worst, at := meanDeviation(t, newSampler(cfg, size), full, c.x, 20000)
				t.Logf("%s: %s", name, at)
				check(name, worst, at)
			}
		}
	}
}

// fullOperator is the whole graph's operator of agg, GCN or Mean.
func fullOperator(g *graph.Graph, agg Aggregation) *tensor.CSR {
	if agg == Mean {
		return g.MeanNorm()
	}
	return g.GCNNorm()
}

var aggNames = []string{GCN: "gcn", Mean: "mean", Attention: "attention"}

// benchmarkLayerwise reports a layer-wise sampler's sampled edges per
// second on an SBM graph of 200,000 nodes and average degree 20 (the
// dataset sbm:200000:20), GCN, batches of 512 seeds, for spec.
func benchmarkLayerwise(b *testing.B, spec string) {
	g, _, _, err := graph.SBM(graph.SBMConfig{Nodes: 200000, Classes: 10, AvgDegree: 20, Homophily: 0.7}, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := testConfig(g, GCN, strings.Count(spec, ",")+1, 512)
	s, err := New(spec, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var batch Batch
	edges := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Sample(1+i/s.Batches(), i%s.Batches(), &batch); err != nil {
			b.Fatal(err)
		}
		for _, blk := range batch.Blocks {
			edges += blockOperator(blk).NNZ()
		}
	}
	b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
	b.ReportMetric(float64(edges)/float64(b.N), "edges/batch")
}
