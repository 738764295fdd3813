package nn

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

// hubGraph is a star whose hub, node 0, has more than two segments of
// neighbours (the last one partial), plus random edges among the leaves.
func hubGraph(t testing.TB) *graph.Graph {
	t.Helper()
	n := 2*gatSegment + 700
	rng := rand.New(rand.NewPCG(5, 6))
	var src, dst []int32
	for i := 1; i < n; i++ {
		src, dst = append(src, 0), append(dst, int32(i))
		src, dst = append(src, int32(1+rng.IntN(n-1))), append(dst, int32(1+rng.IntN(n-1)))
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// hubBlock is a sampled block as neighbor:-1 draws it around a star's hub:
// the destinations are the hub (node 0, reading every source) and dsts−1
// leaves (each reading the hub and itself), the sources the hub and all
// its leaves, whose global ids are shifted by 7.
func hubBlock(t testing.TB, leaves, dsts int) *Block {
	t.Helper()
	a := &tensor.CSR{Rows: dsts, Cols: leaves + 1, Offsets: []int64{0}}
	for j := 0; j <= leaves; j++ {
		a.Indices = append(a.Indices, int32(j))
	}
	a.Offsets = append(a.Offsets, int64(len(a.Indices)))
	for i := 1; i < dsts; i++ {
		a.Indices = append(a.Indices, 0, int32(i))
		a.Offsets = append(a.Offsets, int64(len(a.Indices)))
	}
	a.Values = make([]float32, len(a.Indices))
	ids := make([]int32, leaves+1)
	for j := range ids {
		ids[j] = int32(j + 7)
	}
	g, err := NewBlock(Operators{Loops: a}, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A hub's row and column run by segments; the gradients still match finite
// differences of the float64 reference, for the parameters and for the
// inputs of the hub and two leaves.
func TestGATLongRowGradients(t *testing.T) {
	const in, out = 3, 2
	gg := hubGraph(t)
	rg := newRefGraph(gg)
	n := gg.N
	for _, gc := range []struct {
		heads   int
		concat  bool
		dropout float64
	}{{2, true, 0.4}, {3, false, 0}} {
		t.Run(fmt.Sprintf("heads=%d/concat=%v/dropout=%v", gc.heads, gc.concat, gc.dropout), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			x32 := randomMatrix(n, in, rng)
			x := f64(x32.Data)
			l := randomGAT(t, GATConfig{In: in, Out: out, Heads: gc.heads, Concat: gc.concat, AttentionDropout: gc.dropout, AttentionSite: 5}, rng)
			y := l.Forward(WholeGraph(gg), NewFeatures(x32, ForceDense), Mode{Train: true, Seed: 3, Step: 4})
			if len(l.plan.long) != 1 || l.plan.long[0] != 0 || len(l.plan.segLo) != 3 {
				t.Fatalf("long rows %v in %d segments, want the hub in 3", l.plan.long, len(l.plan.segLo))
			}
			kept := attentionScale(3, 4, 5, gc.dropout)
			wv, as, ad, bv := paramVar(l.Weight), paramVar(l.AttSrc), paramVar(l.AttDst), paramVar(l.Bias)
			ref := func() []float64 {
				return gatRef(rg, x, in, gc.heads, out, gc.concat, wv.val, as.val, ad.val, bv.val, kept)
			}
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			dx := l.Backward(r32(r, y.Rows, y.Cols), true)
			if len(l.planT.long) != 1 || l.planT.long[0] != 0 {
				t.Fatalf("long columns %v, want the hub", l.planT.long)
			}
			xs := fdVar{"x[0:3 rows]", x[:3*in], dx.Data[:3*in]}
			checkGradients(t, r, ref, xs, wv, as, ad, bv)
		})
	}
}

// gatRun returns a GAT layer's output, input gradient and parameter
// gradients on g at the given GOMAXPROCS.
func gatRun(t *testing.T, g *Block, x *tensor.Matrix, procs int, cfg GATConfig) []float32 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	rng := rand.New(rand.NewPCG(1, 2))
	l, err := NewGAT(0, "layers.0", cfg, Glorot, rng)
	if err != nil {
		t.Fatal(err)
	}
	rand32(l.AttSrc.Value, rng)
	rand32(l.AttDst.Value, rng)
	y := l.Forward(g, NewFeatures(x, ForceDense), Mode{Train: true, Seed: 9, Step: 2})
	out := slices.Clone(y.Data)
	dy := randomMatrix(y.Rows, y.Cols, rng)
	out = append(out, l.Backward(dy, true).Data...)
	for _, p := range l.Params() {
		out = append(out, p.Grad.Data...)
	}
	return out
}

// The split of a hub's row among workers does not change a bit of GAT's
// output or gradients, whatever the number of workers.
func TestGATHubDoesNotDependOnGOMAXPROCS(t *testing.T) {
	gg := hubGraph(t)
	leaves := 3*gatSegment + 5
	for _, tc := range []struct {
		name  string
		block func() *Block
		rows  int
	}{
		{"whole", func() *Block { return WholeGraph(gg) }, gg.N},
		{"block", func() *Block { return hubBlock(t, leaves, 300) }, leaves + 1},
	} {
		x := randomMatrix(tc.rows, 6, rand.New(rand.NewPCG(3, 4)))
		for _, cfg := range []GATConfig{
			{In: 6, Out: 5, Heads: 3, Concat: true, AttentionDropout: 0.3, AttentionSite: 2},
			{In: 6, Out: 5, Heads: 2},
		} {
			want := gatRun(t, tc.block(), x, 1, cfg)
			for _, procs := range []int{2, 7} {
				got := gatRun(t, tc.block(), x, procs, cfg)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s %+v: GOMAXPROCS %d: value %d is %v, at GOMAXPROCS 1 %v", tc.name, cfg, procs, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkGATLayer times one GAT layer's forward and backward pass (8
// heads of 8, as the gat recipe's first layer) on a random graph of 30k
// nodes and average degree 16, on a star whose hub has 100k leaves, and on
// a sampled block around that hub (the hub and 1023 leaves as
// destinations), where the hub's row is almost all the work.
func BenchmarkGATLayer(b *testing.B) {
	const n = 100_001
	star := make([]int32, n-1)
	leaves := make([]int32, n-1)
	for i := range leaves {
		leaves[i] = int32(i + 1)
	}
	sg, err := graph.FromEdges(n, star, leaves, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		g    *Block
	}{{"random", WholeGraph(randomGraph(b, 30_000, 16, 1))}, {"star", WholeGraph(sg)}, {"star-block", hubBlock(b, n-1, 1024)}} {
		b.Run(tc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 2))
			x := randomMatrix(tc.g.NumSrc, 32, rng)
			l, _ := NewGAT(0, "layers.0", GATConfig{In: 32, Out: 8, Heads: 8, Concat: true, AttentionDropout: 0.6}, Glorot, rng)
			g := tc.g
			y := l.Forward(g, DenseFeatures(x), Mode{Train: true})
			dy := randomMatrix(y.Rows, y.Cols, rng)
			for b.Loop() {
				l.Forward(g, DenseFeatures(x), Mode{Train: true})
				l.Backward(dy, false)
			}
		})
	}
}
