package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/graft-gnn/graft/internal/dropmask"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/internal/vec"
	"github.com/graft-gnn/graft/tensor"
)

// GATConfig shapes a GAT layer.
type GATConfig struct {
	In, Out, Heads   int
	Concat           bool    // concatenate heads (Heads·Out outputs) or average them (Out)
	AttentionDropout float64 // dropout on the attention coefficients, in [0, 1)
	AttentionSite    uint64  // dropout site of the attention coefficients
}

// GAT is a graph attention layer (Veličković et al.; PyG's GATConv with its
// default self loops): for every head h, z = x·W, the score of edge j → i is
// e_ij = LeakyReLU_0.2(a_dst·z_i + a_src·z_j), the coefficients α are the
// softmax of e over i's in-edges including its self loop, and
// y_i = Σ_j α_ij z_j; heads are concatenated or averaged, then a bias added.
type GAT struct {
	Weight, AttSrc, AttDst, Bias *Param
	cfg                          GATConfig
	index                        int

	g       *Block
	x       Features
	round   bool            // z is rounded to bf16 (Model.SetBF16)
	prod    tensor.Products // Model.SetProducts
	dropped bool            // attention dropout was applied in the last Forward
	key     uint64
	thr     uint64

	z, zext, asrc, adst *tensor.Matrix // per-node quantities
	zsrc                *tensor.Matrix // the sources' rows of z: z, or zext with a halo
	plan, planT         rowPlan        // the work split of the pattern and of its transpose
	scratch             gatScratch
	zdst                headView  // the destinations' rows of z
	score, alpha, drop  []float32 // per edge and head: e before LeakyReLU, α, α after dropout
	y                   *tensor.Matrix
	dscore              []float32
	dzext, dasrc, dadst *tensor.Matrix
	dx                  gradBuffer
	dhead               tensor.Matrix // the owned rows of dzext, with a halo
}

// NewGAT returns a GAT layer at position index of its model with parameters
// prefix.lin.weight, prefix.att_src, prefix.att_dst and prefix.bias.
func NewGAT(index int, prefix string, cfg GATConfig, init Init, rng *rand.Rand) (*GAT, error) {
	if cfg.In < 1 || cfg.Out < 1 || cfg.Heads < 1 {
		return nil, fmt.Errorf("nn: GAT needs positive sizes (in %d, out %d, heads %d)", cfg.In, cfg.Out, cfg.Heads)
	}
	if cfg.AttentionDropout < 0 || cfg.AttentionDropout >= 1 {
		return nil, fmt.Errorf("nn: attention dropout %v outside [0, 1)", cfg.AttentionDropout)
	}
	h, c := cfg.Heads, cfg.Out
	width := c
	if cfg.Concat {
		width = h * c
	}
	l := &GAT{cfg: cfg, index: index,
		Weight: newWeight(prefix+".lin.weight", cfg.In, h*c),
		AttSrc: newParam(prefix+".att_src", h, c, []int{1, h, c}, false),
		AttDst: newParam(prefix+".att_dst", h, c, []int{1, h, c}, false),
		Bias:   newBias(prefix+".bias", width),
	}
	if err := initUniform(l.Weight.Value, init, cfg.In, h*c, rng); err != nil {
		return nil, err
	}
	// PyG initialises the attention vectors with glorot over their last two
	// dimensions, [heads, out].
	if err := initUniform(l.AttSrc.Value, Glorot, h, c, rng); err != nil {
		return nil, err
	}
	return l, initUniform(l.AttDst.Value, Glorot, h, c, rng)
}

func (l *GAT) Params() []*Param { return []*Param{l.Weight, l.AttSrc, l.AttDst, l.Bias} }

// attentionKept reports whether the coefficient of edge (global target i,
// global source j) in head h survives dropout.
func attentionKept(key, thr uint64, h int, i, j uint64) bool {
	return dropmask.Mix64(dropmask.Mix64(key^uint64(h+1)*0x9e3779b97f4a7c15)^(i<<32|j&0xffffffff)) >= thr
}

// headDot returns, for every row r of z and head h, Σ_c z[r, h, c]·a[h, c].
func headDot(dst, z, a *tensor.Matrix) {
	hs, c := a.Rows, a.Cols
	parallel.For(z.Rows, 256, rangeTask(func(lo, hi int) {
		for r := lo; r < hi; r++ {
			zr, dr := z.Row(r), dst.Row(r)
			for h := 0; h < hs; h++ {
				dr[h] = vec.Dot(zr[h*c:(h+1)*c], a.Row(h))
			}
		}
	}))
}

func (l *GAT) Forward(g *Block, x Features, mode Mode) *tensor.Matrix {
	prod := productsFor(l.prod, mode)
	checkInput("GAT", x, l.Weight)
	checkRows("GAT", g, x)
	l.g, l.x = g, x
	hs, c := l.cfg.Heads, l.cfg.Out
	z := ensure(&l.z, x.Rows(), hs*c)
	x.mul(prod, z, l.Weight.Value)
	if l.round {
		roundBF16(z)
	}
	zext := g.extend(l.index, z, &l.zext)
	asrc := ensure(&l.asrc, g.NumSrc, hs)
	adst := ensure(&l.adst, g.NumDst, hs)
	headDot(asrc, zext, l.AttSrc.Value)
	headDot(adst, l.zdst.matrix(z, g.NumDst), l.AttDst.Value)

	adj := g.loopsOp()
	ne := adj.NNZ()
	ensureSlice(&l.score, ne*hs)
	ensureSlice(&l.alpha, ne*hs)
	l.dropped = mode.Train && l.cfg.AttentionDropout > 0
	if l.dropped {
		ensureSlice(&l.drop, ne*hs)
		l.key, l.thr = dropKey(mode.Seed, mode.Step, l.cfg.AttentionSite), dropThreshold(l.cfg.AttentionDropout)
	}
	l.zsrc = zext
	y := ensure(&l.y, g.NumDst, l.Bias.Value.Cols)
	l.attend(adj, y)
	addRowVector(y, l.Bias.Value.Data)
	return y
}

func (l *GAT) Backward(dy *tensor.Matrix, inputGrad bool) *tensor.Matrix {
	g := l.g
	hs, c := l.cfg.Heads, l.cfg.Out
	biasGrad(l.Bias, dy)
	adj := g.loopsOp()
	ensureSlice(&l.dscore, adj.NNZ()*hs)
	dadst := ensure(&l.dadst, g.NumDst, hs)
	// Per target: gradients of the scores (before LeakyReLU) and of a_dst·z_i.
	l.scoreGrads(adj, dy, dadst)
	// Per source: gradient of z_j through the aggregation and through
	// a_src·z_j, gathered over the transposed pattern.
	adjT, perm := g.loopsTranspose()
	dzext := ensure(&l.dzext, g.NumSrc, hs*c)
	ensure(&l.dasrc, g.NumSrc, hs)
	l.sourceGrads(adjT, perm, dy, dzext)

	// Attention vectors: Σ over nodes of (score gradient)·z.
	attGrad(l.AttSrc.Grad, l.dasrc, l.zsrc)
	attGrad(l.AttDst.Grad, dadst, l.zdst.matrix(l.z, g.NumDst))

	dh := g.reduce(l.index, dzext, &l.dhead)
	l.x.mulTN(l.prod, l.Weight.Grad, dh)
	return inputGradient(l.prod, l.dx.slot(), l.x, dh, l.Weight, inputGrad)
}

// attGrad sets grad[h, c] = Σ_r d[r, h]·z[r, h·C + c].
func attGrad(grad, d, z *tensor.Matrix) {
	hs, c := grad.Rows, grad.Cols
	grad.Zero()
	for r := 0; r < d.Rows; r++ {
		zr, dr := z.Row(r), d.Row(r)
		for h := 0; h < hs; h++ {
			dh := dr[h]
			if dh == 0 {
				continue
			}
			vec.Axpy(dh, zr[h*c:(h+1)*c], grad.Row(h))
		}
	}
}
