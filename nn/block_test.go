package nn

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/tensor"
)

func sameCSR(a, b *tensor.CSR) bool {
	return a.Rows == b.Rows && a.Cols == b.Cols && slices.Equal(a.Offsets, b.Offsets) &&
		slices.Equal(a.Indices[:a.NNZ()], b.Indices[:b.NNZ()]) && slices.Equal(a.Values, b.Values)
}

// TestTransposedOperators checks that the backward operators equal the
// explicit transposes, whether the symmetric shortcut applies or not.
func TestTransposedOperators(t *testing.T) {
	sym := randomGraph(t, 300, 6, 11)
	rng := rand.New(rand.NewPCG(3, 3))
	var src, dst []int32
	for range 1500 {
		src, dst = append(src, int32(rng.IntN(300))), append(dst, int32(rng.IntN(300)))
	}
	directed, err := graph.FromEdges(300, src, dst, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
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
