package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graft-gnn/graft/graph"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/tensor"
)

// The gradient tests follow one pattern: a naive float64 reference forward
// (plain loops) is checked against our float32 forward, and central finite
// differences of Σ R⊙out through the reference are checked against the
// gradients our float32 Backward produces for R.

// fdVar is one differentiable quantity: its float64 copy, which the
// reference reads and the finite differences perturb, and the gradient our
// backward pass produced.
type fdVar struct {
	name string
	val  []float64
	got  []float32
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func paramVar(p *Param) fdVar { return fdVar{p.Name, f64(p.Value.Data), p.Grad.Data} }

// checkForward compares our output with the reference's.
func checkForward(t *testing.T, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("forward: %d outputs, reference has %d", len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-4+1e-4*math.Abs(want[i]) {
			t.Fatalf("forward[%d] = %v, reference %v", i, got[i], want[i])
		}
	}
}

// checkGradients compares every variable's gradient of Σ r⊙ref() with
// central differences.
func checkGradients(t *testing.T, r []float64, ref func() []float64, vars ...fdVar) {
	t.Helper()
	objective := func() float64 {
		var s float64
		for i, v := range ref() {
			s += r[i] * v
		}
		return s
	}
	const eps = 1e-6
	for _, v := range vars {
		if len(v.got) != len(v.val) {
			t.Fatalf("%s: gradient has %d values for %d", v.name, len(v.got), len(v.val))
		}
		for k := range v.val {
			x := v.val[k]
			v.val[k] = x + eps
			up := objective()
			v.val[k] = x - eps
			down := objective()
			v.val[k] = x
			num := (up - down) / (2 * eps)
			if d := math.Abs(num - float64(v.got[k])); d > 1e-3*math.Abs(num)+2e-4 {
				t.Errorf("d/d%s[%d] = %v, finite differences %v", v.name, k, v.got[k], num)
				return
			}
		}
	}
}

// refGraph is a float64 view of a graph for the references.
type refGraph struct {
	n   int
	adj [][]int // in-neighbours, no self loops
}

func newRefGraph(g *graph.Graph) refGraph {
	r := refGraph{n: g.N, adj: make([][]int, g.N)}
	for v := 0; v < g.N; v++ {
		for _, u := range g.Adj(v) {
			if int(u) != v {
				r.adj[v] = append(r.adj[v], int(u))
			}
		}
	}
	return r
}

// matmul64 returns a (n×k) · b (k×m).
func matmul64(a []float64, n, k int, b []float64, m int) []float64 {
	out := make([]float64, n*m)
	for i := 0; i < n; i++ {
		for l := 0; l < k; l++ {
			for j := 0; j < m; j++ {
				out[i*m+j] += a[i*k+l] * b[l*m+j]
			}
		}
	}
	return out
}

func addBias64(y, b []float64) {
	for i := range y {
		y[i] += b[i%len(b)]
	}
}

// refProjection is what the references apply to the per-node quantity a
// graph layer aggregates (x·W): the identity, or rounding to bf16 in the
// forward checks of bf16 layers.
var refProjection = func(h []float64) []float64 { return h }

func gcnRef(g refGraph, x []float64, in int, w, b []float64) []float64 {
	out := len(b)
	h := refProjection(matmul64(x, g.n, in, w, out))
	y := make([]float64, g.n*out)
	deg := func(v int) float64 { return float64(len(g.adj[v]) + 1) }
	for i := 0; i < g.n; i++ {
		for _, j := range append(slices.Clone(g.adj[i]), i) {
			c := 1 / math.Sqrt(deg(i)*deg(j))
			for k := 0; k < out; k++ {
				y[i*out+k] += c * h[j*out+k]
			}
		}
	}
	addBias64(y, b)
	return y
}

func sageRef(g refGraph, x []float64, in int, wl, bl, wr []float64) []float64 {
	out := len(bl)
	y := matmul64(x, g.n, in, wr, out)
	h := refProjection(matmul64(x, g.n, in, wl, out))
	for i := 0; i < g.n; i++ {
		for _, j := range g.adj[i] {
			for o := 0; o < out; o++ {
				y[i*out+o] += h[j*out+o] / float64(len(g.adj[i]))
			}
		}
	}
	addBias64(y, bl)
	return y
}

// randomGAT is a GAT layer of cfg with random bias and attention vectors:
// scores larger than Glorot's exercise both sides of the LeakyReLU.
func randomGAT(t *testing.T, cfg GATConfig, rng *rand.Rand) *GAT {
	t.Helper()
	l, err := NewGAT(0, "layers.0", cfg, Glorot, rng)
	if err != nil {
		t.Fatal(err)
	}
	rand32(l.Bias.Value, rng)
	rand32(l.AttSrc.Value, rng)
	rand32(l.AttDst.Value, rng)
	return l
}

// attentionScale is the references' attention dropout of a layer run with
// Mode{Seed: seed, Step: step} at site: 1/(1−p) for a kept edge of head h
// from j to i, 0 for a dropped one; nil (none) when p is 0.
func attentionScale(seed, step, site uint64, p float64) func(h int, i, j uint64) float64 {
	if p == 0 {
		return nil
	}
	return func(h int, i, j uint64) float64 {
		if attentionKept(dropKey(seed, step, site), dropThreshold(p), h, i, j) {
			return 1 / (1 - p)
		}
		return 0
	}
}

// gatRef computes GAT with attention dropout given by kept (nil: none).
func gatRef(g refGraph, x []float64, in, heads, c int, concat bool, w, asrc, adst, b []float64,
	kept func(h int, i, j uint64) float64) []float64 {
	z := refProjection(matmul64(x, g.n, in, w, heads*c))
	width := len(b)
	y := make([]float64, g.n*width)
	dot := func(r, h int, a []float64) float64 {
		var s float64
		for k := 0; k < c; k++ {
			s += z[r*heads*c+h*c+k] * a[h*c+k]
		}
		return s
	}
	for i := 0; i < g.n; i++ {
		nbrs := append(slices.Clone(g.adj[i]), i)
		for h := 0; h < heads; h++ {
			e := make([]float64, len(nbrs))
			var sum float64
			for q, j := range nbrs {
				s := dot(j, h, asrc) + dot(i, h, adst)
				if s < 0 {
					s *= 0.2
				}
				e[q] = math.Exp(s)
				sum += e[q]
			}
			for q, j := range nbrs {
				a := e[q] / sum
				if kept != nil {
					a *= kept(h, uint64(i), uint64(j))
				}
				for k := 0; k < c; k++ {
					v := a * z[j*heads*c+h*c+k]
					if concat {
						y[i*width+h*c+k] += v
					} else {
						y[i*width+k] += v / float64(heads)
					}
				}
			}
		}
	}
	addBias64(y, b)
	return y
}

func randomR(n int, rng *rand.Rand) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	return r
}

func r32(r []float64, rows, cols int) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for i, v := range r {
		m.Data[i] = float32(v)
	}
	return m
}

func TestLayerGradients(t *testing.T) {
	const n, in, out = 9, 5, 4
	gg := randomGraph(t, n, 3, 7)
	rg := newRefGraph(gg)
	for _, tc := range []struct {
		name   string
		sparse bool
	}{{"dense", false}, {"sparse", true}} {
		rng := rand.New(rand.NewPCG(11, 12))
		x32 := randomMatrix(n, in, rng)
		if tc.sparse {
			for i := range x32.Data { // mostly zeros, as bag-of-words features
				if rng.Float64() < 0.6 {
					x32.Data[i] = 0
				}
			}
		}
		feats := NewFeatures(x32, ForceDense)
		if tc.sparse {
			feats = NewFeatures(x32, ForceSparse)
		}
		x := f64(x32.Data)
		inputVar := func(dx *tensor.Matrix) []fdVar {
			if tc.sparse {
				if dx != nil {
					t.Fatal("sparse input returned an input gradient")
				}
				return nil
			}
			return []fdVar{{"x", x, dx.Data}}
		}
		t.Run("Linear/"+tc.name, func(t *testing.T) {
			l, _ := NewLinear("lin", in, out, Glorot, rng)
			rand32(l.Bias.Value, rng)
			y := l.Forward(WholeGraph(gg), feats, Mode{})
			wv, bv := paramVar(l.Weight), paramVar(l.Bias)
			ref := func() []float64 { r := matmul64(x, n, in, wv.val, out); addBias64(r, bv.val); return r }
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			dx := l.Backward(r32(r, n, out), true)
			checkGradients(t, r, ref, append(inputVar(dx), wv, bv)...)
		})
		t.Run("GCN/"+tc.name, func(t *testing.T) {
			l, _ := NewGCN(0, "layers.0", in, out, Glorot, rng)
			rand32(l.Bias.Value, rng)
			y := l.Forward(WholeGraph(gg), feats, Mode{})
			wv, bv := paramVar(l.Weight), paramVar(l.Bias)
			ref := func() []float64 { return gcnRef(rg, x, in, wv.val, bv.val) }
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			dx := l.Backward(r32(r, n, out), true)
			checkGradients(t, r, ref, append(inputVar(dx), wv, bv)...)
		})
		t.Run("SAGE/"+tc.name, func(t *testing.T) {
			l, _ := NewSAGE(0, "layers.0", in, out, Glorot, rng)
			rand32(l.BiasL.Value, rng)
			y := l.Forward(WholeGraph(gg), feats, Mode{})
			wl, bl, wr := paramVar(l.WeightL), paramVar(l.BiasL), paramVar(l.WeightR)
			ref := func() []float64 { return sageRef(rg, x, in, wl.val, bl.val, wr.val) }
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			dx := l.Backward(r32(r, n, out), true)
			checkGradients(t, r, ref, append(inputVar(dx), wl, bl, wr)...)
		})
		for _, gc := range []struct {
			heads   int
			concat  bool
			dropout float64
		}{{1, true, 0}, {3, true, 0}, {3, false, 0}, {2, true, 0.4}, {2, false, 0.4}} {
			name := fmt.Sprintf("GAT/%s/heads=%d/concat=%v/dropout=%v", tc.name, gc.heads, gc.concat, gc.dropout)
			t.Run(name, func(t *testing.T) {
				l := randomGAT(t, GATConfig{In: in, Out: out, Heads: gc.heads, Concat: gc.concat, AttentionDropout: gc.dropout, AttentionSite: 5}, rng)
				y := l.Forward(WholeGraph(gg), feats, Mode{Train: true, Seed: 3, Step: 4})
				kept := attentionScale(3, 4, 5, gc.dropout)
				wv, as, ad, bv := paramVar(l.Weight), paramVar(l.AttSrc), paramVar(l.AttDst), paramVar(l.Bias)
				ref := func() []float64 {
					return gatRef(rg, x, in, gc.heads, out, gc.concat, wv.val, as.val, ad.val, bv.val, kept)
				}
				checkForward(t, y.Data, ref())
				r := randomR(len(y.Data), rng)
				dx := l.Backward(r32(r, y.Rows, y.Cols), true)
				checkGradients(t, r, ref, append(inputVar(dx), wv, as, ad, bv)...)
			})
		}
	}
}

func rand32(m *tensor.Matrix, rng *rand.Rand) {
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
}

func TestActivationGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		kind Activation
		f    func(float64) float64
	}{
		{ReLU, func(v float64) float64 { return max(v, 0) }},
		{ELU, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return math.Expm1(v)
		}},
		{LeakyReLU, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return 0.01 * v
		}},
		{Identity, func(v float64) float64 { return v }},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			x32 := randomMatrix(6, 5, rng)
			a := Act{Kind: tc.kind}
			y := a.Forward(x32)
			x := f64(x32.Data)
			ref := func() []float64 {
				out := make([]float64, len(x))
				for i, v := range x {
					out[i] = tc.f(v)
				}
				return out
			}
			checkForward(t, y.Data, ref())
			r := randomR(len(x), rng)
			dx := a.Backward(r32(r, 6, 5))
			checkGradients(t, r, ref, fdVar{"x", x, dx.Data})
		})
	}
}

func TestDropoutGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x32 := randomMatrix(7, 9, rng)
	g := &Block{NumDst: 7, NumSrc: 7, SrcIDs: []int32{40, 3, 17, 8, 99, 1, 5}}
	d := Dropout{P: 0.3, Site: 2}
	mode := Mode{Train: true, Seed: 9, Step: 1}
	y := d.Forward(g, DenseFeatures(x32), mode).Dense
	x := f64(x32.Data)
	ref := func() []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			if !Dropped(0.3, 9, 1, 2, uint64(g.SrcIDs[i/9]), uint64(i%9)) {
				out[i] = v / 0.7
			}
		}
		return out
	}
	checkForward(t, y.Data, ref())
	r := randomR(len(x), rng)
	dx := d.Backward(r32(r, 7, 9))
	checkGradients(t, r, ref, fdVar{"x", x, dx.Data})
}

func TestCrossEntropyGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, c = 8, 4
	logits32 := randomMatrix(n, c, rng)
	labels := []int32{0, 3, 1, 2, 2, 0, 1, 3}
	rows := []int32{1, 2, 5, 6}
	const norm = 3.5
	var ce CrossEntropy
	loss, grad, err := ce.Forward(logits32, labels, rows, norm)
	if err != nil {
		t.Fatal(err)
	}
	logits := f64(logits32.Data)
	ref := func() []float64 {
		var l float64
		for _, r := range rows {
			row := logits[int(r)*c : int(r+1)*c]
			var z float64
			for _, v := range row {
				z += math.Exp(v)
			}
			l -= row[labels[r]] - math.Log(z)
		}
		return []float64{l / norm}
	}
	checkForward(t, []float32{float32(loss)}, ref())
	checkGradients(t, []float64{1}, ref, fdVar{"logits", logits, grad.Data})

	if _, _, err := ce.Forward(logits32, []int32{0, 9, 1, 2, 2, 0, 1, 3}, rows, 1); err == nil {
		t.Error("a label outside the classes was accepted")
	}
	if _, _, err := ce.Forward(logits32, labels, rows, 0); err == nil {
		t.Error("a zero normaliser was accepted")
	}
	if _, _, err := ce.Forward(logits32, labels, []int32{1, 5, 1}, 1); err == nil {
		t.Error("a row listed twice was accepted")
	}
	if _, _, err := ce.Forward(logits32, labels, []int32{2, 8}, 1); err == nil {
		t.Error("a row outside the logits was accepted")
	}
	// The failed calls leave nothing behind: the rows are accepted again.
	if again, _, err := ce.Forward(logits32, labels, rows, norm); err != nil || again != loss {
		t.Errorf("after the failed calls: loss %v, %v; want %v", again, err, loss)
	}
}

func TestWeightedCrossEntropyGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const n, c = 7, 3
	logits32 := randomMatrix(n, c, rng)
	labels := []int32{0, 2, 1, 1, 0, 2, 2}
	rows := []int32{0, 3, 4, 6}
	weights := []float32{0.5, 2, 1.25, 3}
	const norm = 2.5
	var ce CrossEntropy
	loss, grad, err := ce.ForwardWeighted(logits32, labels, rows, weights, norm)
	if err != nil {
		t.Fatal(err)
	}
	logits := f64(logits32.Data)
	ref := func() []float64 {
		var l float64
		for i, r := range rows {
			row := logits[int(r)*c : int(r+1)*c]
			var z float64
			for _, v := range row {
				z += math.Exp(v)
			}
			l -= float64(weights[i]) * (row[labels[r]] - math.Log(z))
		}
		return []float64{l / norm}
	}
	checkForward(t, []float32{float32(loss)}, ref())
	checkGradients(t, []float64{1}, ref, fdVar{"logits", logits, grad.Data})
	if _, _, err := ce.ForwardWeighted(logits32, labels, rows, weights[:2], norm); err == nil {
		t.Error("fewer weights than rows were accepted")
	}
}

func TestMSEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pred32, target32 := randomMatrix(5, 3, rng), randomMatrix(5, 3, rng)
	rows := []int32{0, 3, 4}
	var mse MSE
	loss, grad, err := mse.Forward(pred32, target32, rows, 2)
	if err != nil {
		t.Fatal(err)
	}
	pred, target := f64(pred32.Data), f64(target32.Data)
	ref := func() []float64 {
		var l float64
		for _, r := range rows {
			for j := 0; j < 3; j++ {
				d := pred[int(r)*3+j] - target[int(r)*3+j]
				l += d * d
			}
		}
		return []float64{l / 2}
	}
	checkForward(t, []float32{float32(loss)}, ref())
	checkGradients(t, []float64{1}, ref, fdVar{"pred", pred, grad.Data})
}

// TestModelGradients checks whole 2-layer models, dropout included, against
// a reference built from the layer references. At bf16 (SetBF16, features
// in bf16) the forward pass is the reference's with the features and the
// layers' projections rounded to bf16, and the gradients, which take the
// rounding as the identity, are those of the reference with each rounding
// frozen into a constant offset (frozenRounding).
func TestModelGradients(t *testing.T) {
	const n, in, hidden, classes = 10, 6, 5, 3
	gg := randomGraph(t, n, 3, 21)
	rg := newRefGraph(gg)
	for _, tc := range []struct {
		model           string
		normalize, bf16 bool
	}{{"gcn", false, false}, {"sage", false, false}, {"sage", true, false}, {"gat", false, false},
		{"gcn", false, true}, {"sage", false, true}, {"sage", true, true}, {"gat", false, true}} {
		model, name := tc.model, tc.model
		if tc.normalize {
			name += "-normalize"
		}
		if tc.bf16 {
			name += "/bf16"
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			x32 := randomMatrix(n, in, rng)
			features := DenseFeatures(x32)
			if tc.bf16 {
				x16 := tensor.MatrixToBF16(x32)
				x32, features = x16.Widen(), BF16Features(x16)
			}
			cfg := Config{Model: model, InFeatures: in, Hidden: hidden, Classes: classes, Heads: 2, OutputHeads: 2,
				Dropout: 0.2, AttentionDropout: 0.2, Seed: 77, Normalize: tc.normalize}
			m, err := NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params() {
				if p.Shape[0] == 1 || len(p.Shape) == 1 { // biases and attention vectors
					rand32(p.Value, rng)
				}
			}
			m.SetStep(5)
			m.SetBF16(tc.bf16)
			y := m.Forward([]*Block{WholeGraph(gg)}, features, true)
			vars := map[string]fdVar{}
			var list []fdVar
			for _, p := range m.Params() {
				v := paramVar(p)
				vars[p.Name] = v
				list = append(list, v)
			}
			x := f64(x32.Data)
			drop := dropRef
			kept := func(site uint64) func(h int, i, j uint64) float64 { return attentionScale(77, 5, site, 0.2) }
			p := func(name string) []float64 { return vars[name].val }
			ref := func() []float64 {
				h := drop(x, in, 0)
				var w1 int
				switch model {
				case "gcn":
					h, w1 = gcnRef(rg, h, in, p("layers.0.weight"), p("layers.0.bias")), hidden
				case "sage":
					h, w1 = sageRef(rg, h, in, p("layers.0.lin_l.weight"), p("layers.0.lin_l.bias"), p("layers.0.lin_r.weight")), hidden
				case "gat":
					h = gatRef(rg, h, in, 2, hidden, true, p("layers.0.lin.weight"), p("layers.0.att_src"),
						p("layers.0.att_dst"), p("layers.0.bias"), kept(attentionSite))
					w1 = 2 * hidden
				}
				for i, v := range h {
					if model == "gat" {
						if v < 0 {
							h[i] = math.Expm1(v)
						}
					} else {
						h[i] = max(v, 0)
					}
				}
				if tc.normalize {
					h = l2NormRef(h, w1)
				}
				h = drop(h, w1, 1)
				switch model {
				case "gcn":
					return gcnRef(rg, h, w1, p("layers.1.weight"), p("layers.1.bias"))
				case "sage":
					return sageRef(rg, h, w1, p("layers.1.lin_l.weight"), p("layers.1.lin_l.bias"), p("layers.1.lin_r.weight"))
				}
				return gatRef(rg, h, w1, 2, classes, false, p("layers.1.lin.weight"), p("layers.1.att_src"),
					p("layers.1.att_dst"), p("layers.1.bias"), kept(attentionSite+1))
			}
			if tc.bf16 {
				defer frozenRounding(ref)()
			}
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			m.Backward(r32(r, y.Rows, y.Cols))
			checkGradients(t, r, ref, list...)
		})
	}
}

// dropRef is the reference of the model tests' dropout (0.2, seed 77, step
// 5) at site, over rows of cols values.
func dropRef(v []float64, cols int, site uint64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		if !Dropped(0.2, 77, 5, site, uint64(i/cols), uint64(i%cols)) {
			out[i] = v[i] / 0.8
		}
	}
	return out
}

// frozenRounding makes the references' projections those of a bf16 layer
// frozen at the current parameters: one evaluation of ref records what
// rounding each projection to bf16 added to it, and from then on each
// projection adds the same amount. The reference's value is the bf16
// model's there, and its derivatives are the straight-through ones: those
// of the float32 model at the rounded values, which the bf16 layers
// compute. It returns the function that restores the identity.
func frozenRounding(ref func() []float64) (restore func()) {
	var offsets [][]float64
	refProjection = func(h []float64) []float64 {
		d := make([]float64, len(h))
		for i, v := range h {
			d[i] = float64(bf16.ToFloat32(bf16.FromFloat32(float32(v)))) - v
		}
		offsets = append(offsets, d)
		return addRef(h, d)
	}
	ref()
	calls := 0
	refProjection = func(h []float64) []float64 {
		d := offsets[calls%len(offsets)]
		calls++
		return addRef(h, d)
	}
	return func() { refProjection = func(h []float64) []float64 { return h } }
}

func addRef(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// l2NormRef scales every row of the n×cols matrix x to unit L2 norm.
func l2NormRef(x []float64, cols int) []float64 {
	out := make([]float64, len(x))
	for i := 0; i < len(x); i += cols {
		var ss float64
		for _, v := range x[i : i+cols] {
			ss += v * v
		}
		s := 1 / max(math.Sqrt(ss), normEps)
		for j, v := range x[i : i+cols] {
			out[i+j] = v * s
		}
	}
	return out
}

func TestRowL2NormGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x32 := randomMatrix(6, 4, rng)
	clear(x32.Row(2)) // a zero row must stay finite
	var n RowL2Norm
	y := n.Forward(x32)
	x := f64(x32.Data)
	ref := func() []float64 { return l2NormRef(x, 4) }
	checkForward(t, y.Data, ref())
	for i := 0; i < y.Rows; i++ {
		if i == 2 {
			continue
		}
		var ss float64
		for _, v := range y.Row(i) {
			ss += float64(v) * float64(v)
		}
		if math.Abs(ss-1) > 1e-5 {
			t.Errorf("row %d has squared norm %v after normalisation", i, ss)
		}
	}
	r := randomR(len(x), rng)
	dx := n.Backward(r32(r, 6, 4))
	// The zero row's gradient is dy/ε; finite differences across the kink
	// at 0 are meaningless there, so check it directly and the rest by FD.
	for j, v := range dx.Row(2) {
		if want := float32(r[2*4+j] / normEps); math.Abs(float64(v-want)) > 1e-6*math.Abs(float64(want)) {
			t.Errorf("zero row: dx[%d] = %v, want dy/ε = %v", j, v, want)
		}
	}
	for j := range 4 {
		r[2*4+j] = 0
		dx.Row(2)[j] = 0
	}
	checkGradients(t, r, ref, fdVar{"x", x, dx.Data})
}
