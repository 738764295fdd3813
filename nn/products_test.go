package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// roundMatrix returns m's values rounded to bfloat16.
func roundMatrix(m *tensor.Matrix) *tensor.Matrix {
	return tensor.MatrixToBF16(m).Widen()
}

// oneLayer is a model of one graph layer of kind on g, its weights
// rounded to bfloat16 so that only the products' rounding of the other
// operand can tell bf16 products from float32 ones.
func oneLayer(t *testing.T, kind string, in, classes int, p tensor.Products) *Model {
	t.Helper()
	m, err := NewModel(Config{Model: kind, InFeatures: in, Hidden: 8, Classes: classes, Layers: 1, Heads: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range m.Params() {
		copy(q.Value.Data, roundMatrix(q.Value).Data)
	}
	m.SetProducts(p)
	return m
}

// With BF16Products a layer's training products round both operands to
// bfloat16: on inputs, weights and output gradients that are bf16 values
// already, the forward pass is float32's to the order of the sums, and so
// are the gradients of a layer whose products take the output gradient
// itself (mlp: dW = xᵀ·dy); a graph layer's weight gradient multiplies the
// aggregated gradient, which bf16 rounds. Elsewhere they differ from
// float32's by the rounding, no more. Evaluation multiplies in float32 at
// either setting, bit for bit. A CPU without bf16 products multiplies in
// float32 at either setting.
func TestBF16ProductsRoundTheOperandsInTrainingOnly(t *testing.T) {
	g := WholeGraph(randomGraph(t, 300, 6, 4))
	const in, classes = 40, 5
	rng := rand.New(rand.NewPCG(7, 8))
	x := randomMatrix(g.NumSrc, in, rng)
	dy := randomMatrix(g.NumDst, classes, rng)
	for _, kind := range []string{"mlp", "gcn", "sage", "gat"} {
		run := func(p tensor.Products, x, dy *tensor.Matrix, train bool) (out []float32, grads [][]float32) {
			m := oneLayer(t, kind, in, classes, p)
			out = slices.Clone(m.Forward([]*Block{g}, DenseFeatures(x), train).Data)
			if !train {
				return out, nil
			}
			m.Backward(dy)
			for _, q := range m.Params() {
				grads = append(grads, slices.Clone(q.Grad.Data))
			}
			return out, grads
		}
		// Bounds relative to the largest value: rounding each operand
		// moves a product by at most 2⁻⁸ of it.
		near := func(what string, got, want []float32, tol float64) float64 {
			t.Helper()
			scale, worst := 0.0, 0.0
			for i := range want {
				scale = math.Max(scale, math.Abs(float64(want[i])))
				worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > tol*scale {
				t.Fatalf("%s: %s off by %.3g of its largest value %.3g (want ≤ %.3g)", kind, what, worst/scale, scale, tol)
			}
			return worst / scale
		}
		if !tensor.BF16Products.Rounds() {
			out16, grads16 := run(tensor.BF16Products, x, dy, true)
			out32, grads32 := run(tensor.FP32Products, x, dy, true)
			if !slices.Equal(out16, out32) || !slices.EqualFunc(grads16, grads32, slices.Equal) {
				t.Fatalf("%s: without bf16 instructions bf16 products differ from float32's", kind)
			}
			continue
		}
		xr, dyr := roundMatrix(x), roundMatrix(dy)
		out16, grads16 := run(tensor.BF16Products, xr, dyr, true)
		out32, grads32 := run(tensor.FP32Products, xr, dyr, true)
		near("output on bf16 inputs", out16, out32, 1e-5)
		rounded := 0.0
		for i := range grads32 {
			tol := 4e-2
			if kind == "mlp" {
				tol = 1e-5
			}
			rounded = max(rounded, near("a gradient on bf16 inputs", grads16[i], grads32[i], tol))
		}
		if kind != "mlp" && rounded < 1e-6 {
			t.Fatalf("%s: bf16 products' gradients are float32's to %.3g: the backward products were not rounded", kind, rounded)
		}
		out16, grads16 = run(tensor.BF16Products, x, dy, true)
		out32, grads32 = run(tensor.FP32Products, x, dy, true)
		if d := near("output", out16, out32, 1.5e-2); d < 1e-6 {
			t.Fatalf("%s: bf16 products' output is float32's to %.3g: the operands were not rounded", kind, d)
		}
		for i := range grads32 {
			near("a gradient", grads16[i], grads32[i], 4e-2) // GAT's softmax amplifies it
		}
		eval16, _ := run(tensor.BF16Products, x, nil, false)
		eval32, _ := run(tensor.FP32Products, x, nil, false)
		if !slices.Equal(eval16, eval32) {
			t.Fatalf("%s: evaluation with bf16 products differs from float32's", kind)
		}
	}
}

// Every product of a layer's training passes rounds at BF16Products: the
// forward product, each weight gradient's and the input gradient's (which
// a one-layer model never computes), on the whole graph (the input is
// projected, then aggregated) and on a bipartite block (aggregated, then
// projected), including GraphSAGE's root weight (WeightR) in each. The
// second layer of a two-layer model runs alone (ForwardRange and
// BackwardRange from layer 1), so its input gradient is returned. A product
// left in float32 gives float32's result exactly where no other product
// feeds it: the input gradient of GCN and of an MLP is one product of the
// output gradient's aggregation, which bf16 products do not change, and
// GraphSAGE's two weights are told apart by zeroing one at a time. GAT's
// input gradient reads the attention, which the forward product changes,
// so only its bound is checked.
func TestBF16ProductsRoundEveryProduct(t *testing.T) {
	if !tensor.BF16Products.Rounds() {
		t.Skip("no bf16 instructions: bf16 products multiply in float32 (TestBF16ProductsRoundTheOperandsInTrainingOnly)")
	}
	const hidden, classes = 8, 5
	rng := rand.New(rand.NewPCG(9, 10))
	bipartite, _ := randomBlock(t, 10, 100, rng)
	blocks := map[string]*Block{"whole graph": WholeGraph(randomGraph(t, 300, 6, 4)), "bipartite block": bipartite}
	for _, where := range []string{"whole graph", "bipartite block"} {
		g := blocks[where]
		dy := randomMatrix(g.NumDst, classes, rng)
		for _, tc := range []struct {
			kind, zero string // zero: a weight of layer 1 set to 0
		}{{"mlp", ""}, {"gcn", ""}, {"gat", ""}, {"sage", ""}, {"sage", "layers.1.lin_l.weight"}, {"sage", "layers.1.lin_r.weight"}} {
			name := tc.kind + " on the " + where
			if tc.zero != "" {
				name += " without " + tc.zero
			}
			newModel := func() *Model {
				m, err := NewModel(Config{Model: tc.kind, InFeatures: 3, Hidden: hidden, Classes: classes, Layers: 2, Heads: 2, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			x := randomMatrix(g.InputRows(), newModel().LayerParams(1)[0].Value.Rows, rng) // GAT's heads widen it
			run := func(p tensor.Products) (out, dx []float32, grads map[string][]float32) {
				m := newModel()
				for _, q := range m.LayerParams(1) {
					copy(q.Value.Data, roundMatrix(q.Value).Data)
					if q.Name == tc.zero {
						clear(q.Value.Data)
					}
				}
				m.SetProducts(p)
				blocks := []*Block{g, g}
				out = slices.Clone(m.ForwardRange(1, 2, blocks, DenseFeatures(x.Clone()), true).Data)
				dx = slices.Clone(m.BackwardRange(1, 2, dy.Clone()).Data)
				grads = map[string][]float32{}
				for _, q := range m.LayerParams(1) {
					if q.Value.Rows > 1 { // a weight: a bias's gradient is a sum, not a product
						grads[q.Name] = slices.Clone(q.Grad.Data)
					}
				}
				return out, dx, grads
			}
			// rounded returns how far got is from want, relative to want's
			// largest value, failing beyond tol or, unless loose, when got is
			// want to float32's sums.
			rounded := func(what string, got, want []float32, tol float64, loose bool) {
				t.Helper()
				scale, worst := 0.0, 0.0
				for i := range want {
					scale = math.Max(scale, math.Abs(float64(want[i])))
					worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
				}
				switch {
				case scale == 0:
					t.Fatalf("%s: %s is 0", name, what)
				case worst > tol*scale:
					t.Errorf("%s: %s off by %.3g of its largest value (want ≤ %.3g)", name, what, worst/scale, tol)
				case !loose && worst < 1e-6*scale:
					t.Errorf("%s: %s with bf16 products is float32's to %.3g: a product was not rounded", name, what, worst/scale)
				}
			}
			out16, dx16, grads16 := run(tensor.BF16Products)
			out32, dx32, grads32 := run(tensor.FP32Products)
			rounded("the output", out16, out32, 1.5e-2, false)
			rounded("the input gradient", dx16, dx32, 4e-2, tc.kind == "gat")
			if len(grads32) == 0 {
				t.Fatalf("%s: no weights", name)
			}
			for p, want := range grads32 {
				rounded("the gradient of "+p, grads16[p], want, 4e-2, false)
			}
		}
	}
}
