package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// The last layer evaluated from its input's projections equals the layer
// evaluated from its input, to float rounding: GCN and SAGE, whose output
// (4 classes) is narrower than their input (32); GAT and a last layer as
// wide as its input do not project.
func TestForwardLastProjected(t *testing.T) {
	g := randomGraph(t, 200, 6, 3)
	block := WholeGraph(g)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		model       string
		classes     int
		projections int
	}{{"gcn", 4, 1}, {"sage", 4, 2}, {"gat", 4, 0}, {"sage", 20, 0}} {
		m, err := NewModel(Config{Model: tc.model, InFeatures: 8, Hidden: 32, Classes: tc.classes, Layers: 3, Heads: 1, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.LastProjections(); got != tc.projections {
			t.Fatalf("%s with %d classes: %d projections, want %d", tc.model, tc.classes, got, tc.projections)
		}
		if tc.projections == 0 {
			continue
		}
		x := randomMatrix(g.N, 32, rng) // the last layer's input
		want := m.ForwardLayer(2, block, DenseFeatures(x)).Clone()
		proj := []*tensor.Matrix{tensor.New(g.N, tc.classes), tensor.New(g.N, tc.classes)}
		m.ProjectForLast(x, proj[:tc.projections])
		var dst *tensor.Matrix
		if tc.projections == 2 {
			dst = proj[1]
		}
		got := m.ForwardLastProjected(block, proj[0], dst)
		for i, w := range want.Data {
			if math.Abs(float64(got.Data[i]-w)) > 1e-5*(1+math.Abs(float64(w))) {
				t.Fatalf("%s: output %d is %v from the projections, %v from the input", tc.model, i, got.Data[i], w)
			}
		}
	}
}
