package nn

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/memacct"
	"github.com/graft-gnn/graft/tensor"
)

func sameCSR(a, b *tensor.CSR) bool {
	return a.Rows == b.Rows && a.Cols == b.Cols && slices.Equal(a.Offsets, b.Offsets) &&
		slices.Equal(a.Indices[:a.NNZ()], b.Indices[:b.NNZ()]) && slices.Equal(a.Values, b.Values)
}

// directedGraph is a graph of n nodes and m random directed edges.
func directedGraph(t *testing.T, n, m int, seed uint64) *graph.Graph {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	var src, dst []int32
	for range m {
		src, dst = append(src, int32(rng.IntN(n))), append(dst, int32(rng.IntN(n)))
	}
	g, err := graph.FromEdges(n, src, dst, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTransposedOperators checks that the backward operators equal the
// explicit transposes, whether the symmetric shortcut applies or not.
func TestTransposedOperators(t *testing.T) {
	sym, directed := randomGraph(t, 300, 6, 11), directedGraph(t, 300, 1500, 3)
	for _, tc := range []struct {
		name string
		g    *graph.Graph
		sym  bool
	}{{"symmetric", sym, true}, {"directed", directed, false}} {
		if got := symmetricByHash(tc.g); got != tc.sym || got != tc.g.IsSymmetric() {
			t.Errorf("%s: symmetricByHash = %v, IsSymmetric = %v", tc.name, got, tc.g.IsSymmetric())
		}
		g := WholeGraph(tc.g)
		if !sameCSR(g.gcnTOp(), g.gcnOp().Transpose()) {
			t.Errorf("%s: GCN's backward operator is not its transpose", tc.name)
		}
		if !sameCSR(g.meanTOp(), g.meanOp().Transpose()) {
			t.Errorf("%s: the mean operator's backward operator is not its transpose", tc.name)
		}
		if tc.sym && g.gcnTOp() != g.gcnOp() {
			t.Errorf("%s: GCN's operator was copied", tc.name)
		}
	}
}

// TestOperatorsInTheMemoryAccount checks that a block counts every
// operator it builds, at its size, under memacct.Operators, nothing it
// shares, and takes them all out on Release; storage kept across Reset
// counts only when it grows.
func TestOperatorsInTheMemoryAccount(t *testing.T) {
	held := func() int64 { return memacct.Held(memacct.Operators) }
	const n = 300
	spec := newDropSpec(0.5, Mode{Train: true, Seed: 1}, 0)
	for _, tc := range []struct {
		name string
		g    *graph.Graph
		sym  bool
	}{{"symmetric", randomGraph(t, n, 6, 11), true}, {"directed", directedGraph(t, n, 1500, 3), false}} {
		e := int64(len(tc.g.Neighbors))
		l := int64(len(tc.g.WithSelfLoops().Neighbors))
		offsets := int64(8 * (n + 1))
		// Each step builds one operator; want is the bytes it adds.
		g := WholeGraph(tc.g)
		steps := []struct {
			name  string
			build func()
			want  int64
		}{
			{"self-loop pattern", func() { g.loopsOp() }, offsets + 4*l},
			{"GCN", func() { g.gcnOp() }, 4 * l},
			{"GCN transposed", func() { g.gcnTOp() }, offsets + 8*l},
			{"mean", func() { g.meanOp() }, 4 * e},
			{"mean transposed", func() { g.meanTOp() }, offsets + 8*e},
			{"self-loop pattern transposed", func() { g.loopsTranspose() }, offsets + 4*l + 8*l},
			{"mean renumbered", func() { g.sharedOp(g.meanOp(), make([]int32, n), n) }, 4 * e},
			{"mean renumbered again", func() { g.sharedOp(g.meanOp(), make([]int32, n), n) }, 0},
			{"keep bits of 100 columns", func() { g.selectedMask(g.meanOp(), &spec, 100) }, 8 * 2 * n},
			{"keep bits of fewer columns", func() { g.selectedMask(g.meanOp(), &spec, 64) }, 0},
		}
		if tc.sym {
			steps[2].want = 0     // GCN is its own transpose
			steps[4].want = 4 * e // the transpose shares the mean's pattern
		}
		base := held()
		for _, s := range steps {
			before := held()
			s.build()
			if got := held() - before; got != s.want {
				t.Errorf("%s: %s counted %d bytes, want %d", tc.name, s.name, got, s.want)
			}
		}
		g.Release()
		if held() != base {
			t.Errorf("%s: %d bytes still counted after Release", tc.name, held()-base)
		}
	}

	// A sampler's block, reset for every batch, keeps its transposes'
	// storage: it counts the growth alone, and lets go of renumbered copies.
	big, small := directedGraph(t, n, 1500, 5), directedGraph(t, n, 800, 6)
	base := held()
	b, err := NewBlock(Operators{Mean: big.MeanNorm()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.meanTOp()
	grown := held() - base
	if want := int64(8*(n+1)) + 8*int64(len(big.Neighbors)); grown != want {
		t.Errorf("first batch: %d bytes, want %d", grown, want)
	}
	b.selectedMask(b.meanOp(), &spec, 100)
	if got, want := held()-base-grown, int64(8*2*n); got != want {
		t.Errorf("keep bits: %d bytes, want %d", got, want)
	}
	grown = held() - base
	b.sharedOp(b.meanOp(), make([]int32, n), n)
	for _, g := range []*graph.Graph{small, big, small} {
		if err := b.Reset(Operators{Mean: g.MeanNorm()}, nil); err != nil {
			t.Fatal(err)
		}
		b.meanTOp()
		b.selectedMask(b.meanOp(), &spec, 100)
		if held()-base != grown {
			t.Errorf("after a reset: %d bytes counted, want %d (the storage's)", held()-base, grown)
		}
	}
	b.Release()
	if held() != base {
		t.Errorf("%d bytes still counted after Release", held()-base)
	}
}
