package sample

import (
	"fmt"
	"math"
	"runtime"
	"slices"
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
		cfg := testConfig(g, agg, 3, 37)
		s, err := New("neighbor:5,3,2", cfg)
		if err != nil {
			t.Fatal(err)
		}
		seeds := map[int32]int{}
		var b Batch
		for i := range s.Batches() {
			if err := s.Sample(2, i, &b); err != nil {
				t.Fatal(err)
			}
			checkBatch(t, g, cfg.Train, &b)
			for _, v := range b.Output {
				seeds[v]++
			}
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
		}
		if len(seeds) != len(cfg.Train) {
			t.Fatalf("an epoch dealt %d distinct seeds of %d training nodes", len(seeds), len(cfg.Train))
		}
		for v, c := range seeds {
			if c != 1 {
				t.Fatalf("seed %d dealt %d times in an epoch", v, c)
			}
		}
	}
}

// "Every sampler is deterministic: a batch depends only on (seed, epoch,
// batch index), never on thread count or timing."
func TestNeighborIsDeterministic(t *testing.T) {
	g, _, _ := testGraph(t, 3000, 20)
	cfg := testConfig(g, GCN, 2, 256)
	checkDeterministic(t, func(epoch, index int) string {
		s, _ := New("neighbor:10,25", cfg)
		var b Batch
		if err := s.Sample(epoch, index, &b); err != nil {
			t.Fatal(err)
		}
		return batchString(&b)
	})
}

// checkDeterministic checks that sample(epoch, index), a batch written
// out, is the same at GOMAXPROCS 1, 2 and 7, and differs for another epoch
// or index.
func checkDeterministic(t *testing.T, sample func(epoch, index int) string) {
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
// the whole graph's.
func TestNeighborGCNIsUnbiased(t *testing.T) {
	g, x, _ := testGraph(t, 300, 30)
	cfg := testConfig(g, GCN, 1, 1)
	cfg.Train = []int32{7}
	s := NewNeighbor(cfg, []int{4})
	// The full row: Â's entries, 1/√(d̂_v·d̂_u) with d̂ counting the self loop.
	dhat := func(v int32) float64 { return float64(g.Degree(int(v)) + 1) }
	want := make([]float64, x.Cols)
	for _, u := range append(slices.Clone(g.Adj(7)), 7) {
		for c := range x.Cols {
			want[c] += float64(x.At(int(u), c)) / math.Sqrt(dhat(7)*dhat(u))
		}
	}
	const draws = 20000
	got := make([]float64, x.Cols)
	var b Batch
	for e := range draws {
		if err := s.Sample(e+1, 0, &b); err != nil {
			t.Fatal(err)
		}
		op := blockOperator(b.Blocks[0])
		for p := op.Offsets[0]; p < op.Offsets[1]; p++ {
			for c := range x.Cols {
				got[c] += float64(op.Value(p)) * float64(x.At(int(b.Input[op.Indices[p]]), c)) / draws
			}
		}
	}
	for c := range want {
		if math.Abs(got[c]-want[c]) > 0.02 {
			t.Fatalf("feature %d: sampled rows average %.4f, the full row gives %.4f", c, got[c], want[c])
		}
	}
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
	cfg := testConfig(g, Mean, 2, 10)
	for _, spec := range []string{"neighbor:5", "neighbor:5,0", "neighbor:a,b", "neighbor:5,-2", "nope:1", "neighbor:1,2,3"} {
		if _, err := New(spec, cfg); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
}
