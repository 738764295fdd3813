package nn

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// At bf16 a part's GCN and GraphSAGE layers hold every hidden output but
// the last in bf16 and compute into one float32 buffer, in training and
// evaluation passes; on the whole graph (no halo) the outputs are rounded
// in place instead; at fp32 nothing changes. TestPartitionedEqualsWhole
// checks that all of them compute the same.
func TestHiddenOutputsHeldInBF16(t *testing.T) {
	const n, in, hidden, classes, parts = 40, 12, 6, 4, 3
	gg := randomGraph(t, n, 4, 31)
	for _, model := range []string{"gcn", "sage"} {
		for _, layers := range []int{3, 4} {
			for _, halo := range []string{"exchange", "shared"} {
				t.Run(model+"/"+string(rune('0'+layers))+"/"+halo, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(3, 4))
					x := tensor.MatrixToBF16(randomMatrix(n, in, rng))
					owner := make([]int, n)
					for v := range owner {
						owner[v] = v % parts
					}
					e := partition(t, gg, owner, parts)
					cfg := Config{Model: model, InFeatures: in, Hidden: hidden, Classes: classes, Layers: layers, Dropout: 0.3, Seed: 8}
					models := make([]*Model, parts)
					for p, lp := range e.parts {
						if halo == "shared" {
							lp.g.Halo = shareHalo{pullHalo{lp.g.Halo.(testHalo)}}
						}
						models[p], _ = NewModel(cfg)
						models[p].SetBF16(true)
					}
					for _, train := range []bool{true, false} {
						var wg sync.WaitGroup
						for p, lp := range e.parts {
							wg.Add(1)
							go func() {
								defer wg.Done()
								out := models[p].Forward([]*Block{lp.g}, BF16Features(x.SelectRows(lp.targets)), train)
								if train {
									models[p].Backward(randomMatrix(out.Rows, out.Cols, rand.New(rand.NewPCG(uint64(p), 1))))
								}
							}()
						}
						wg.Wait()
						for p, lp := range e.parts {
							m := models[p]
							for i := 0; i < layers-1; i++ {
								want := outputHeld
								if i == layers-2 {
									want = outputWide
								}
								if m.narrow.pass[i] != want {
									t.Fatalf("train %v, part %d: layer %d's output kept as %d, want %d", train, p, i, m.narrow.pass[i], want)
								}
								if y := *m.narrow.layers[i].outputSlot(); y != m.narrow.wide {
									t.Fatalf("train %v, part %d: layer %d computes into a float32 buffer of its own", train, p, i)
								}
								if want == outputHeld && len(m.narrow.held[i].Data) != len(lp.targets)*hidden {
									t.Fatalf("train %v, part %d: layer %d holds %d bf16 values for %d rows of %d", train, p, i, len(m.narrow.held[i].Data), len(lp.targets), hidden)
								}
							}
						}
					}
				})
			}
		}
	}
	for _, bf16 := range []bool{false, true} {
		m, _ := NewModel(Config{Model: "sage", InFeatures: in, Hidden: hidden, Classes: classes, Layers: 3, Seed: 8})
		m.SetBF16(bf16)
		rng := rand.New(rand.NewPCG(5, 6))
		m.Forward([]*Block{WholeGraph(gg)}, DenseFeatures(randomMatrix(n, in, rng)), true)
		want := outputFloat32
		if bf16 {
			want = outputRounded
		}
		if m.narrow.pass[0] != want || *m.narrow.layers[0].outputSlot() == m.narrow.wide {
			t.Errorf("bf16 %v, whole graph: the first layer's output kept as %d in the shared buffer %v, want %d in its own",
				bf16, m.narrow.pass[0], *m.narrow.layers[0].outputSlot() == m.narrow.wide, want)
		}
	}
}

// TestHiddenOutputGradients checks 3-layer GCN and GraphSAGE models at
// bf16 against the float64 reference with the features, the projections
// and the first hidden output (after its ReLU and the next layer's
// dropout) rounded to bf16, each rounding frozen into a constant offset
// for the gradients (frozenRounding): the rounding of a hidden output is
// the identity to the backward pass, as the projections' is.
func TestHiddenOutputGradients(t *testing.T) {
	const n, in, hidden, classes = 10, 6, 5, 3
	gg := randomGraph(t, n, 3, 21)
	rg := newRefGraph(gg)
	for _, model := range []string{"gcn", "sage"} {
		t.Run(model, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			x16 := tensor.MatrixToBF16(randomMatrix(n, in, rng))
			m, err := NewModel(Config{Model: model, InFeatures: in, Hidden: hidden, Classes: classes, Layers: 3, Dropout: 0.2, Seed: 77})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params() {
				if len(p.Shape) == 1 || p.Shape[0] == 1 {
					rand32(p.Value, rng)
				}
			}
			m.SetStep(5)
			m.SetBF16(true)
			y := m.Forward([]*Block{WholeGraph(gg)}, BF16Features(x16), true)
			if m.narrow.pass[0] != outputRounded {
				t.Fatalf("the first hidden output kept as %d, want rounded", m.narrow.pass[0])
			}
			vars := map[string]fdVar{}
			var list []fdVar
			for _, p := range m.Params() {
				vars[p.Name] = paramVar(p)
				list = append(list, vars[p.Name])
			}
			p := func(name string) []float64 { return vars[name].val }
			drop := func(v []float64, cols int, site uint64) []float64 {
				out := make([]float64, len(v))
				for i := range v {
					if !Dropped(0.2, 77, 5, site, uint64(i/cols), uint64(i%cols)) {
						out[i] = v[i] / 0.8
					}
				}
				return out
			}
			layer := func(i int, h []float64, width int) []float64 {
				pre := "layers." + string(rune('0'+i))
				if model == "gcn" {
					return gcnRef(rg, h, width, p(pre+".weight"), p(pre+".bias"))
				}
				return sageRef(rg, h, width, p(pre+".lin_l.weight"), p(pre+".lin_l.bias"), p(pre+".lin_r.weight"))
			}
			relu := func(h []float64) []float64 {
				for i, v := range h {
					h[i] = max(v, 0)
				}
				return h
			}
			ref := func() []float64 {
				h := layer(0, drop(f64(x16.Widen().Data), in, 0), in)
				h = refProjection(drop(relu(h), hidden, 1)) // the held output's rounding
				h = drop(relu(layer(1, h, hidden)), hidden, 2)
				return layer(2, h, hidden)
			}
			defer frozenRounding(ref)()
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			m.Backward(r32(r, y.Rows, y.Cols))
			checkGradients(t, r, ref, list...)
		})
	}
}
