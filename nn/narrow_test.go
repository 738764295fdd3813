package nn

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// At bf16 GCN and GraphSAGE layers hold every hidden output but the last
// in bf16 and compute into one float32 buffer, in training and evaluation
// passes, on parts as on the whole graph; at fp32, and for GAT, nothing
// changes. TestPartitionedEqualsWhole checks that parts compute what the
// whole graph does.
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
	for _, tc := range []struct {
		model string
		bf16  bool
		want  outputStorage
	}{{"sage", false, outputFloat32}, {"sage", true, outputHeld}, {"gcn", true, outputHeld}, {"gat", true, outputFloat32}} {
		m, _ := NewModel(Config{Model: tc.model, InFeatures: in, Hidden: hidden, Classes: classes, Layers: 3, Heads: 2, Activation: ReLU, Seed: 8})
		m.SetBF16(tc.bf16)
		rng := rand.New(rand.NewPCG(5, 6))
		m.Forward([]*Block{WholeGraph(gg)}, DenseFeatures(randomMatrix(n, in, rng)), true)
		if m.narrow.pass[0] != tc.want {
			t.Errorf("%s, bf16 %v, whole graph: the first layer's output kept as %d, want %d", tc.model, tc.bf16, m.narrow.pass[0], tc.want)
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
			if m.narrow.pass[0] != outputHeld {
				t.Fatalf("the first hidden output kept as %d, want held in bf16", m.narrow.pass[0])
			}
			vars := map[string]fdVar{}
			var list []fdVar
			for _, p := range m.Params() {
				vars[p.Name] = paramVar(p)
				list = append(list, vars[p.Name])
			}
			p := func(name string) []float64 { return vars[name].val }
			drop := dropRef
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

// gradOverDY's tiles give the products of the whole rows: dh·W_hᵀ +
// dy·W_yᵀ, or dh·W_hᵀ alone, written over dy, for tiles of one row, of a
// few rows and of all of them.
func TestGradOverDYTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const rows, in, out = 37, 6, 6
	dh, wh, wy := randomMatrix(rows, out, rng), randomMatrix(in, out, rng), randomMatrix(in, out, rng)
	dy := randomMatrix(rows, out, rng)
	for _, withY := range []bool{true, false} {
		want := tensor.New(rows, in)
		tensor.FP32Products.MatMulNT(want, dh, wh)
		w := wy
		if withY {
			tensor.FP32Products.MatMulNTAdd(want, dy, wy)
		} else {
			w = nil
		}
		for _, floats := range []int{1, 13, 5 * out, rows * out, 1 << 20} {
			got := dy.Clone()
			var tile *tensor.Matrix
			gradOverDYTiled(tensor.FP32Products, got, dh, wh, w, &tile, floats)
			for i, v := range want.Data {
				if got.Data[i] != v {
					t.Fatalf("with dy %v, tiles of %d floats: [%d] = %v, want %v", withY, floats, i, got.Data[i], v)
				}
			}
		}
	}
}

// Where training's products round their operands to bf16, holding the
// hidden outputs in bf16 trains exactly what keeping them in float32
// trains: logits and parameter gradients bit for bit, over two steps.
func TestHeldOutputsTrainAsFloat32(t *testing.T) {
	if !tensor.BF16Products.Rounds() {
		t.Skip("this CPU's training products do not run in bf16, and see the rounding")
	}
	const n, in, hidden, classes = 50, 8, 16, 4
	gg := randomGraph(t, n, 4, 17)
	x := tensor.MatrixToBF16(randomMatrix(n, in, rand.New(rand.NewPCG(2, 3))))
	for _, model := range []string{"gcn", "sage"} {
		var logits [2][]float32
		var models [2]*Model
		for k := range models {
			m, err := NewModel(Config{Model: model, InFeatures: in, Hidden: hidden, Classes: classes, Layers: 4, Dropout: 0.3, Seed: 4})
			if err != nil {
				t.Fatal(err)
			}
			m.SetBF16(true)
			m.SetProducts(tensor.BF16Products)
			if k == 1 {
				m.narrow.layers = nil // nothing held
			}
			r := rand.New(rand.NewPCG(1, 1))
			for range 2 {
				y := m.Forward([]*Block{WholeGraph(gg)}, BF16Features(x), true)
				logits[k] = append(logits[k], y.Data...)
				m.Backward(randomMatrix(n, classes, r))
			}
			models[k] = m
		}
		if models[0].narrow.pass[0] != outputHeld {
			t.Fatalf("%s: the first hidden output is not held", model)
		}
		for i, v := range logits[0] {
			if logits[1][i] != v {
				t.Fatalf("%s: logit %d: %v held, %v in float32", model, i, v, logits[1][i])
			}
		}
		for j, p := range models[0].Params() {
			for i, v := range p.Grad.Data {
				if w := models[1].Params()[j].Grad.Data[i]; w != v {
					t.Fatalf("%s: %s[%d]: %v held, %v in float32", model, p.Name, i, v, w)
				}
			}
		}
	}
}
