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
