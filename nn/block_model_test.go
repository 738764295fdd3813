package nn

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

// fullBlocks returns, for a model of the given layers computing the nodes
// seeds of gg, one block per layer that keeps every neighbour: the last
// block's destinations are the seeds, each block's sources its
// destinations then their other neighbours, and each block's destinations
// the previous block's sources. Entries are the whole graph's operators'
// rows, in the same order, with their columns renamed to sources: what a
// sampler that keeps every neighbour makes.
func fullBlocks(t *testing.T, gg *graph.Graph, seeds []int32, layers int) []*Block {
	t.Helper()
	whole := WholeGraph(gg)
	ops := Operators{Loops: whole.loopsOp(), GCN: whole.gcnOp(), Mean: whole.meanOp()}
	blocks := make([]*Block, layers)
	dst := seeds
	for l := layers - 1; l >= 0; l-- {
		src := slices.Clone(dst)
		local := map[int32]int32{}
		for i, v := range dst {
			local[v] = int32(i)
		}
		for _, v := range dst {
			for _, u := range gg.Adj(int(v)) {
				if _, ok := local[u]; !ok {
					local[u] = int32(len(src))
					src = append(src, u)
				}
			}
		}
		restrict := func(a *tensor.CSR) *tensor.CSR {
			out := &tensor.CSR{Rows: len(dst), Cols: len(src), Offsets: make([]int64, len(dst)+1)}
			for i, v := range dst {
				for p := a.Offsets[v]; p < a.Offsets[v+1]; p++ {
					out.Indices = append(out.Indices, local[a.Indices[p]])
					out.Values = append(out.Values, a.Value(p))
				}
				out.Offsets[i+1] = int64(len(out.Indices))
			}
			return out
		}
		b, err := NewBlock(Operators{Loops: restrict(ops.Loops), GCN: restrict(ops.GCN), Mean: restrict(ops.Mean)}, src, nil)
		if err != nil {
			t.Fatal(err)
		}
		blocks[l] = b
		dst = src
	}
	return blocks
}

// A model run on one block per layer that keeps every neighbour computes,
// for its seeds, what the whole-graph model computes, and the parameter
// gradients of a loss on the seeds alone: Forward(blocks) runs each layer
// on its own block, the input is read at the first block's sources, and
// dropout is keyed by global ids, so it does not depend on the sampling.
func TestBlocksPerLayerEqualWholeGraph(t *testing.T) {
	const n, in, classes = 60, 10, 3
	gg := randomGraph(t, n, 3, 17)
	seeds := []int32{41, 3, 17, 28, 9}
	for _, model := range []string{"gcn", "sage", "sage-normalize", "gat", "mlp"} {
		for _, storage := range []Storage{ForceDense, ForceSparse} {
			name := model + map[Storage]string{ForceDense: "/dense", ForceSparse: "/sparse"}[storage]
			model, normalize := strings.CutSuffix(model, "-normalize")
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, 5))
				x := randomMatrix(n, in, rng)
				for i := range x.Data {
					if rng.Float64() < 0.6 {
						x.Data[i] = 0
					}
				}
				cfg := Config{Model: model, InFeatures: in, Hidden: 6, Classes: classes, Layers: 3, Heads: 2,
					Dropout: 0.3, AttentionDropout: 0.3, Seed: 8, Normalize: normalize}
				whole, err := NewModel(cfg)
				if err != nil {
					t.Fatal(err)
				}
				logits := whole.Forward([]*Block{WholeGraph(gg)}, NewFeatures(x, storage), true).Clone()
				r := tensor.New(n, classes) // the loss reads the seeds only
				for _, v := range seeds {
					for c := range classes {
						r.Data[int(v)*classes+c] = float32(rng.NormFloat64())
					}
				}
				whole.Backward(r)

				blocks := fullBlocks(t, gg, seeds, cfg.Layers)
				if blocks[0].NumSrc <= blocks[0].NumDst || blocks[0].NumDst <= len(seeds) {
					t.Fatalf("first block %d destinations, %d sources, for %d seeds: the test needs frontiers that grow", blocks[0].NumDst, blocks[0].NumSrc, len(seeds))
				}
				sampled, _ := NewModel(cfg)
				out := sampled.Forward(blocks, NewFeatures(selectRows(x, blocks[0].SrcIDs), storage), true)
				if out.Rows != len(seeds) {
					t.Fatalf("%d output rows for %d seeds", out.Rows, len(seeds))
				}
				for i, v := range seeds {
					for c := range classes {
						if got, want := out.At(i, c), logits.At(int(v), c); !closeTo(got, want) {
							t.Fatalf("seed %d, class %d: logit %v on blocks, %v on the whole graph", v, c, got, want)
						}
					}
				}
				sampled.Backward(selectRows(r, seeds))
				for k, wp := range whole.Params() {
					for j, want := range wp.Grad.Data {
						if got := sampled.Params()[k].Grad.Data[j]; !closeTo(got, want) {
							t.Fatalf("%s[%d]: gradient %v on blocks, %v on the whole graph", wp.Name, j, got, want)
						}
					}
				}
			})
		}
	}
}

// A block reset to other operators computes what a new block of them
// computes: Reset keeps only storage.
func TestBlockResetEqualsNewBlock(t *testing.T) {
	gg := randomGraph(t, 50, 3, 9)
	a := fullBlocks(t, gg, []int32{1, 2, 3}, 2)
	b := fullBlocks(t, gg, []int32{30, 31}, 2)
	cfg := Config{Model: "gat", InFeatures: 4, Hidden: 5, Classes: 3, Layers: 2, Heads: 2, Seed: 1}
	x := randomMatrix(50, 4, rand.New(rand.NewPCG(1, 1)))
	run := func(blocks []*Block) []float32 {
		m, _ := NewModel(cfg)
		out := m.Forward(blocks, DenseFeatures(selectRows(x, blocks[0].SrcIDs)), false)
		m.Backward(out)
		var g []float32
		for _, p := range m.Params() {
			g = append(g, p.Grad.Data...)
		}
		return append(slices.Clone(out.Data), g...)
	}
	run(a) // builds a's transposes
	for i := range a {
		if err := a[i].Reset(Operators{Loops: b[i].loops, GCN: b[i].gcn, Mean: b[i].mean}, b[i].SrcIDs); err != nil {
			t.Fatal(err)
		}
	}
	got, want := run(a), run(b)
	if !slices.Equal(got, want) {
		t.Fatal("a reset block computes differently from a new one")
	}
}
