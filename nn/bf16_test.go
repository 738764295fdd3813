package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// bf16 features are read as the float32 features of their widened values,
// a block of rows at a time: every product, with and without a deferred
// dropout, gives the bits the same product of the widened matrix gives
// (with dropout both are read in the same blocks; without it the float32
// matrix is multiplied whole, and agrees to float rounding). The matrix
// spans three blocks.
func TestBF16FeatureProducts(t *testing.T) {
	const rows, cols, out = 600, 2048, 5
	rng := rand.New(rand.NewPCG(3, 9))
	x16 := tensor.MatrixToBF16(randomMatrix(rows, cols, rng))
	wide := x16.Widen()
	w, dy := randomMatrix(cols, out, rng), randomMatrix(rows, out, rng)
	ids := make([]int32, rows)
	for i := range ids {
		ids[i] = int32(rng.IntN(1 << 20))
	}
	g := &Block{NumDst: rows, NumSrc: rows, SrcIDs: ids}
	for _, drop := range []bool{false, true} {
		features := func(f Features) Features {
			if !drop {
				return f
			}
			d := &Dropout{P: 0.3, Site: 1}
			return d.forwardLazy(g, f, Mode{Train: true, Seed: 5, Step: 2})
		}
		b, f := features(BF16Features(x16)), features(DenseFeatures(wide))
		if b.Rows() != rows || b.Cols() != cols {
			t.Fatalf("bf16 features are %d×%d", b.Rows(), b.Cols())
		}
		exact := func(name string, got, want *tensor.Matrix) {
			t.Helper()
			if drop && !slices.Equal(got.Data, want.Data) {
				t.Fatalf("dropout %v: %s differs from the widened features'", drop, name)
			}
			for i := range want.Data {
				if math.Abs(float64(got.Data[i]-want.Data[i])) > 1e-4*(1+math.Abs(float64(want.Data[i]))) {
					t.Fatalf("dropout %v: %s[%d] = %v, widened features %v", drop, name, i, got.Data[i], want.Data[i])
				}
			}
		}
		y16, y := tensor.New(rows, out), tensor.New(rows, out)
		b.mul(tensor.FP32Products, y16, w)
		f.mul(tensor.FP32Products, y, w)
		exact("X·W", y16, y)
		b.mulAdd(tensor.FP32Products, y16, w)
		f.mulAdd(tensor.FP32Products, y, w)
		exact("Y + X·W", y16, y)
		dw16, dw := tensor.New(cols, out), tensor.New(cols, out)
		b.mulTN(tensor.FP32Products, dw16, dy)
		f.mulTN(tensor.FP32Products, dw, dy)
		exact("Xᵀ·dY", dw16, dw)
		var buf16, buf *tensor.Matrix
		exact("values", b.values(&buf16), f.values(&buf))
		// projectBF16 rounds the product, the same from dense, bf16 and
		// sparse features.
		p16, p := &tensor.MatrixBF16{Rows: rows, Cols: out, Data: make([]uint16, rows*out)}, tensor.New(rows, out)
		b.projectBF16(tensor.FP32Products, p16, w)
		f.mul(tensor.FP32Products, p, w)
		if !slices.Equal(p16.Data, tensor.MatrixToBF16(p).Data) && drop {
			t.Fatal("the bf16 projection is not the rounded product")
		}
		exact("round(X·W)", p16.Widen(), tensor.MatrixToBF16(p).Widen())
		if !drop {
			sp := &tensor.MatrixBF16{Rows: rows, Cols: out, Data: make([]uint16, rows*out)}
			NewFeatures(wide, ForceSparse).projectBF16(tensor.FP32Products, sp, w)
			exact("round(X·W) from sparse features", sp.Widen(), p16.Widen())
		}
	}
}

// A bf16 model stores its GCN and SAGE projections in bf16: half the
// bytes of the float32 model's, whose layers keep them in float32; and its
// logits differ from the float32 model's (the rounding took place).
func TestBF16ModelStoresHalfTheProjection(t *testing.T) {
	const n, in, hidden, classes = 300, 20, 16, 4
	gg := randomGraph(t, n, 5, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.MatrixToBF16(randomMatrix(n, in, rng))
	for _, model := range []string{"gcn", "sage"} {
		cfg := Config{Model: model, InFeatures: in, Hidden: hidden, Classes: classes, Dropout: 0.5, Seed: 3}
		m16, _ := NewModel(cfg)
		m32, _ := NewModel(cfg)
		m16.SetBF16(true)
		if !m16.BF16() || m32.BF16() {
			t.Fatal("BF16 does not report SetBF16")
		}
		y16 := m16.Forward([]*Block{WholeGraph(gg)}, BF16Features(x), true).Clone()
		y32 := m32.Forward([]*Block{WholeGraph(gg)}, DenseFeatures(x.Widen()), true)
		if slices.Equal(y16.Data, y32.Data) {
			t.Fatalf("%s: bf16 logits equal float32 ones", model)
		}
		for i := range y32.Data {
			if math.Abs(float64(y16.Data[i]-y32.Data[i])) > 0.02*(1+math.Abs(float64(y32.Data[i]))) {
				t.Fatalf("%s: bf16 logit %v, float32 %v", model, y16.Data[i], y32.Data[i])
			}
		}
		var h16, h32 *tensor.Matrix
		switch l := m16.Layers[0].(type) {
		case *GCN:
			h16, h32 = *l.work.slot(), *m32.Layers[0].(*GCN).work.slot()
		case *SAGE:
			h16, h32 = *l.work.slot(), *m32.Layers[0].(*SAGE).work.slot()
		}
		// Both models' transients, shared by their layers, last held the
		// narrower last layer's projection: their capacity is the first's,
		// in bf16 in the bf16 model's (a view of its float32 storage).
		if 4*cap(h16.Data) != 2*n*hidden || 4*cap(h32.Data) != 4*n*hidden {
			t.Fatalf("%s: the projection takes %d bytes in bf16, %d in float32", model, 4*cap(h16.Data), 4*cap(h32.Data))
		}
		// The backward pass takes its float32 scratch from the output's
		// buffer: the transient does not grow to a float32 projection.
		m16.Backward(tensor.New(n, classes))
		for _, l := range m16.Layers {
			var h *tensor.Matrix
			switch l := l.(type) {
			case *GCN:
				h = *l.work.slot()
			case *SAGE:
				h = *l.work.slot()
			}
			if h != h16 || cap(h.Data) != n*hidden/2 {
				t.Fatalf("%s: the transient grew in the backward pass", model)
			}
		}
	}
}
