package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// "SAGE's aggregate-first pass, one product [op·x | x_dst]·[W_L; W_R],
// equals the two products it replaces, forward and backward, to float32
// rounding, at float32 and at bf16 products."
func TestSAGEFusedEqualsTwoProducts(t *testing.T) {
	const nDst, nSrc, in, out = 50, 400, 72, 40
	for _, prod := range []tensor.Products{tensor.FP32Products, tensor.BF16Products} {
		for _, inputGrad := range []bool{true, false} {
			t.Run(fmt.Sprintf("bf16=%v/inputGrad=%v", prod == tensor.BF16Products, inputGrad), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, 8))
				b, _ := randomBlock(t, nDst, nSrc, rng)
				x := randomMatrix(nSrc, in, rng)
				l, _ := NewSAGE(0, "layers.0", in, out, Glorot, rng)
				rand32(l.BiasL.Value, rng)
				l.prod = prod
				y := l.Forward(b, NewFeatures(x, ForceDense), Mode{Train: true}).Clone()
				if !l.pre.on {
					t.Fatal("the layer did not aggregate first")
				}
				dy := randomMatrix(nDst, out, rng)
				dx := l.Backward(dy, inputGrad)

				// The two products, as the layer ran them before fusing.
				a := tensor.New(nDst, in)
				tensor.SpMM(a, b.meanOp(), x)
				xdst := x.RowRange(0, nDst)
				wantY := tensor.New(nDst, out)
				prod.MatMul(wantY, a, l.WeightL.Value)
				prod.MatMulAdd(wantY, xdst, l.WeightR.Value)
				addRowVector(wantY, l.BiasL.Value.Data)
				sameToRounding(t, "y", y, wantY)
				wantWL, wantWR := tensor.New(in, out), tensor.New(in, out)
				prod.MatMulTN(wantWL, a, dy)
				prod.MatMulTN(wantWR, xdst, dy)
				sameToRounding(t, "W_L's gradient", l.WeightL.Grad, wantWL)
				sameToRounding(t, "W_R's gradient", l.WeightR.Grad, wantWR)
				if !inputGrad {
					if dx != nil {
						t.Fatal("an input gradient not asked for")
					}
					if b.meanT != nil {
						t.Fatal("the transposed operator was built for no input gradient")
					}
					return
				}
				da := tensor.New(nDst, in)
				prod.MatMulNT(da, dy, l.WeightL.Value)
				wantDX := tensor.New(nSrc, in)
				tensor.SpMM(wantDX, b.meanTOp(), da)
				prod.MatMulNTAdd(wantDX.RowRange(0, nDst), dy, l.WeightR.Value)
				sameToRounding(t, "x's gradient", dx, wantDX)
			})
		}
	}
}

// sameToRounding fails unless got and want agree to float32 rounding of sums of
// a few hundred terms of order 1.
func sameToRounding(t *testing.T, name string, got, want *tensor.Matrix) {
	t.Helper()
	if !got.SameShape(want) {
		t.Fatalf("%s: %s, want %s", name, got.Shape(), want.Shape())
	}
	for i, w := range want.Data {
		if d := math.Abs(float64(got.Data[i] - w)); d > 1e-4*(1+math.Abs(float64(w))) {
			t.Fatalf("%s[%d] = %v, the two products give %v", name, i, got.Data[i], w)
		}
	}
}
