package nn

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// A model run a range of layers at a time, each range on a model of its
// own built from the same seed (a pipeline's stages), computes Forward's
// logits and Backward's gradients: every stage's parameter gradients, and
// the gradient each range returns is the one the range before takes. With
// no dropout the two are the same bits; with dropout the only difference
// is where a stage boundary's dropout is applied, so they agree to float
// rounding. A stage's model that ran a whole pass before computes the same.
func TestRangesEqualWholeModel(t *testing.T) {
	const n, in, classes = 60, 10, 3
	gg := randomGraph(t, n, 3, 17)
	seeds := []int32{41, 3, 17, 28, 9}
	blocks := fullBlocks(t, gg, seeds, 4)
	rng := rand.New(rand.NewPCG(7, 5))
	x := selectRows(randomMatrix(n, in, rng), blocks[0].SrcIDs)
	r := randomMatrix(len(seeds), classes, rng)
	for _, model := range []string{"gcn", "sage", "sage-normalize", "gat"} {
		for _, dropout := range []float64{0, 0.4} {
			for _, cuts := range [][]int{{0, 4}, {0, 1, 4}, {0, 2, 3, 4}, {0, 1, 2, 3, 4}} {
				model, normalize := strings.CutSuffix(model, "-normalize")
				cfg := Config{Model: model, InFeatures: in, Hidden: 6, Classes: classes, Layers: 4, Heads: 2,
					Dropout: dropout, Seed: 8, Normalize: normalize}
				whole, err := NewModel(cfg)
				if err != nil {
					t.Fatal(err)
				}
				whole.SetStep(5)
				want := whole.Forward(blocks, DenseFeatures(x), true).Clone()
				whole.Backward(r.Clone())

				stages := make([]*Model, len(cuts)-1)
				h := DenseFeatures(x)
				var out *tensor.Matrix
				for s := range stages {
					stages[s], _ = NewModel(cfg)
					stages[s].Forward(blocks, DenseFeatures(x), true) // a pass over every layer leaves nothing behind
					stages[s].SetStep(5)
					out = stages[s].ForwardRange(cuts[s], cuts[s+1], blocks, h, true).Clone()
					h = DenseFeatures(out)
					if got := stages[s].Step(); got != 6 {
						t.Fatalf("the dropout step is %d after a training range, want 6", got)
					}
				}
				d := r.Clone()
				for s := len(stages) - 1; s >= 0; s-- {
					d = stages[s].BackwardRange(cuts[s], cuts[s+1], d)
					if (d == nil) != (s == 0) {
						t.Fatalf("range from layer %d returned an input gradient: %v", cuts[s], d != nil)
					}
					if d != nil {
						d = d.Clone()
					}
				}
				name := model + map[bool]string{true: "-normalize"}[normalize]
				exact := dropout == 0
				check := func(what string, got, want []float32) {
					t.Helper()
					if exact && !slices.Equal(got, want) {
						t.Fatalf("%s, cuts %v: %s differ from the whole model's", name, cuts, what)
					}
					for i := range want {
						if !closeTo(got[i], want[i]) {
							t.Fatalf("%s, dropout %v, cuts %v: %s[%d] = %v, whole model %v", name, dropout, cuts, what, i, got[i], want[i])
						}
					}
				}
				check("logits", out.Data, want.Data)
				for s := range stages {
					for l := cuts[s]; l < cuts[s+1]; l++ {
						for k, p := range stages[s].LayerParams(l) {
							check(p.Name+" gradient", p.Grad.Data, whole.LayerParams(l)[k].Grad.Data)
						}
					}
				}
			}
		}
	}
}
