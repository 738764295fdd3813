package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graft-gnn/graft/tensor"
)

// Layers on bipartite blocks: a sampled block has more sources than
// destinations (the destinations first among them), no halo, an input row
// per source, and sampler-made weights on its operators' entries. The
// references below read the block's edges and weights in float64, and the
// gradients of every layer are checked against their finite differences,
// as in grad_test.go.

// refEdge is one entry of an operator row: a source and its weight.
type refEdge struct {
	src int
	w   float64
}

// refBlock is a float64 view of a bipartite block.
type refBlock struct {
	nDst, nSrc int
	gcn, mean  [][]refEdge // per destination; gcn's rows hold the self loop
}

// randomBlock returns a block of nDst destinations and nSrc sources whose
// operators have random entries and positive random weights, as a sampler
// that reweights its edges makes them, and its float64 view.
func randomBlock(t *testing.T, nDst, nSrc int, rng *rand.Rand) (*Block, refBlock) {
	t.Helper()
	rb := refBlock{nDst: nDst, nSrc: nSrc, gcn: make([][]refEdge, nDst), mean: make([][]refEdge, nDst)}
	gcn := &tensor.CSR{Rows: nDst, Cols: nSrc, Offsets: make([]int64, nDst+1)}
	mean := &tensor.CSR{Rows: nDst, Cols: nSrc, Offsets: make([]int64, nDst+1)}
	for i := range nDst {
		for j := range nSrc {
			self := j == i
			if !self && rng.Float64() > 0.4 {
				continue
			}
			w := 0.2 + rng.Float64()
			gcn.Indices, gcn.Values = append(gcn.Indices, int32(j)), append(gcn.Values, float32(w))
			rb.gcn[i] = append(rb.gcn[i], refEdge{j, float64(float32(w))})
			if !self {
				mw := 0.1 + rng.Float64()
				mean.Indices, mean.Values = append(mean.Indices, int32(j)), append(mean.Values, float32(mw))
				rb.mean[i] = append(rb.mean[i], refEdge{j, float64(float32(mw))})
			}
		}
		gcn.Offsets[i+1], mean.Offsets[i+1] = int64(len(gcn.Indices)), int64(len(mean.Indices))
	}
	ids := make([]int32, nSrc)
	for j, v := range rng.Perm(4 * nSrc)[:nSrc] {
		ids[j] = int32(v)
	}
	b, err := NewBlock(Operators{GCN: gcn, Mean: mean}, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.InputRows() != nSrc {
		t.Fatalf("a block without a halo takes %d input rows, want %d", b.InputRows(), nSrc)
	}
	return b, rb
}

// aggregate64 returns Σ_j w_ij h_j per destination i of rows (width out).
func aggregate64(rows [][]refEdge, h []float64, out int) []float64 {
	y := make([]float64, len(rows)*out)
	for i, row := range rows {
		for _, e := range row {
			for k := range out {
				y[i*out+k] += e.w * h[e.src*out+k]
			}
		}
	}
	return y
}

func gcnBlockRef(b refBlock, x []float64, in int, w, bias []float64) []float64 {
	y := aggregate64(b.gcn, matmul64(x, b.nSrc, in, w, len(bias)), len(bias))
	addBias64(y, bias)
	return y
}

func sageBlockRef(b refBlock, x []float64, in int, wl, bl, wr []float64) []float64 {
	out := len(bl)
	y := aggregate64(b.mean, matmul64(x, b.nSrc, in, wl, out), out)
	self := matmul64(x[:b.nDst*in], b.nDst, in, wr, out)
	for i := range y {
		y[i] += self[i]
	}
	addBias64(y, bl)
	return y
}

// gatBlockRef is gatRef on a block: destination i attends over its GCN
// row's sources (its self loop among them), in order.
func gatBlockRef(b refBlock, ids []int32, x []float64, in, heads, c int, concat bool, w, asrc, adst, bias []float64,
	kept func(h int, i, j uint64) float64) []float64 {
	z := matmul64(x, b.nSrc, in, w, heads*c)
	width := len(bias)
	y := make([]float64, b.nDst*width)
	dot := func(r, h int, a []float64) float64 {
		var s float64
		for k := range c {
			s += z[r*heads*c+h*c+k] * a[h*c+k]
		}
		return s
	}
	for i, row := range b.gcn {
		for h := range heads {
			e := make([]float64, len(row))
			var sum float64
			for q, ed := range row {
				s := dot(ed.src, h, asrc) + dot(i, h, adst)
				if s < 0 {
					s *= 0.2
				}
				e[q] = math.Exp(s)
				sum += e[q]
			}
			for q, ed := range row {
				a := e[q] / sum
				if kept != nil {
					a *= kept(h, uint64(ids[i]), uint64(ids[ed.src]))
				}
				for k := range c {
					v := a * z[ed.src*heads*c+h*c+k]
					if concat {
						y[i*width+h*c+k] += v
					} else {
						y[i*width+k] += v / float64(heads)
					}
				}
			}
		}
	}
	addBias64(y, bias)
	return y
}

// "Finite-difference gradient tests cover layers on bipartite blocks."
func TestLayerGradientsOnBipartiteBlocks(t *testing.T) {
	const nDst, nSrc, in, out = 4, 9, 5, 3
	for _, sparse := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(21, 22))
		b, rb := randomBlock(t, nDst, nSrc, rng)
		x32 := randomMatrix(nSrc, in, rng)
		feats := NewFeatures(x32, ForceDense)
		if sparse {
			for i := range x32.Data {
				if rng.Float64() < 0.5 {
					x32.Data[i] = 0
				}
			}
			feats = NewFeatures(x32, ForceSparse)
		}
		x := f64(x32.Data)
		inputVar := func(dx *tensor.Matrix) []fdVar {
			if sparse {
				if dx != nil {
					t.Fatal("sparse input returned an input gradient")
				}
				return nil
			}
			if dx.Rows != nSrc {
				t.Fatalf("input gradient has %d rows for %d sources", dx.Rows, nSrc)
			}
			return []fdVar{{"x", x, dx.Data}}
		}
		name := fmt.Sprintf("sparse=%v", sparse)
		t.Run("Linear/"+name, func(t *testing.T) {
			l, _ := NewLinear("lin", in, out, Glorot, rng)
			rand32(l.Bias.Value, rng)
			y := l.Forward(b, feats, Mode{})
			wv, bv := paramVar(l.Weight), paramVar(l.Bias)
			ref := func() []float64 {
				r := matmul64(x[:nDst*in], nDst, in, wv.val, out)
				addBias64(r, bv.val)
				return r
			}
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			dx := l.Backward(r32(r, nDst, out), true)
			checkGradients(t, r, ref, append(inputVar(dx), wv, bv)...)
		})
		t.Run("GCN/"+name, func(t *testing.T) {
			l, _ := NewGCN(0, "layers.0", in, out, Glorot, rng)
			rand32(l.Bias.Value, rng)
			y := l.Forward(b, feats, Mode{})
			if l.pre.on == sparse {
				t.Fatalf("aggregated first: %v, for sparse=%v (dense inputs on this block aggregate first)", l.pre.on, sparse)
			}
			wv, bv := paramVar(l.Weight), paramVar(l.Bias)
			ref := func() []float64 { return gcnBlockRef(rb, x, in, wv.val, bv.val) }
			checkForward(t, y.Data, ref())
			r := randomR(len(y.Data), rng)
			dx := l.Backward(r32(r, nDst, out), true)
			checkGradients(t, r, ref, append(inputVar(dx), wv, bv)...)
		})
		for _, inputGrad := range []bool{true, false} {
			t.Run(fmt.Sprintf("SAGE/%s/inputGrad=%v", name, inputGrad), func(t *testing.T) {
				l, _ := NewSAGE(0, "layers.0", in, out, Glorot, rng)
				rand32(l.BiasL.Value, rng)
				y := l.Forward(b, feats, Mode{})
				if l.pre.on == sparse {
					t.Fatalf("aggregated first: %v, for sparse=%v (dense inputs on this block aggregate first)", l.pre.on, sparse)
				}
				wl, bl, wr := paramVar(l.WeightL), paramVar(l.BiasL), paramVar(l.WeightR)
				ref := func() []float64 { return sageBlockRef(rb, x, in, wl.val, bl.val, wr.val) }
				checkForward(t, y.Data, ref())
				r := randomR(len(y.Data), rng)
				dx := l.Backward(r32(r, nDst, out), inputGrad)
				vars := []fdVar{wl, bl, wr}
				if inputGrad {
					vars = append(inputVar(dx), vars...)
				} else if dx != nil {
					t.Fatal("an input gradient not asked for")
				}
				checkGradients(t, r, ref, vars...)
			})
		}
		for _, gc := range []struct {
			heads   int
			concat  bool
			dropout float64
		}{{2, true, 0}, {3, false, 0}, {2, true, 0.4}} {
			t.Run(fmt.Sprintf("GAT/%s/heads=%d/concat=%v/dropout=%v", name, gc.heads, gc.concat, gc.dropout), func(t *testing.T) {
				l := randomGAT(t, GATConfig{In: in, Out: out, Heads: gc.heads, Concat: gc.concat, AttentionDropout: gc.dropout, AttentionSite: 5}, rng)
				y := l.Forward(b, feats, Mode{Train: true, Seed: 3, Step: 4})
				kept := attentionScale(3, 4, 5, gc.dropout)
				wv, as, ad, bv := paramVar(l.Weight), paramVar(l.AttSrc), paramVar(l.AttDst), paramVar(l.Bias)
				ref := func() []float64 {
					return gatBlockRef(rb, b.SrcIDs, x, in, gc.heads, out, gc.concat, wv.val, as.val, ad.val, bv.val, kept)
				}
				checkForward(t, y.Data, ref())
				r := randomR(len(y.Data), rng)
				dx := l.Backward(r32(r, y.Rows, y.Cols), true)
				checkGradients(t, r, ref, append(inputVar(dx), wv, as, ad, bv)...)
			})
		}
	}
}
