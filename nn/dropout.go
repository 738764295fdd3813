package nn

import (
	"github.com/graft-gnn/graft/internal/dropmask"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Mode says how a forward pass runs. Seed and Step key dropout: the model
// advances Step after each training pass, and every worker of a distributed
// run must use the same Seed and Step.
type Mode struct {
	Train bool
	Seed  uint64
	Step  uint64
}

// dropKey derives the key of one dropout site at one step.
func dropKey(seed, step, site uint64) uint64 {
	k := dropmask.Mix64(seed + 0x9e3779b97f4a7c15)
	k = dropmask.Mix64(k ^ (step + 0x632be59bd9b4e019))
	return dropmask.Mix64(k ^ (site + 0x8cb92ba72f3d8dd7))
}

// dropThreshold returns the hash value below which an element is dropped
// with probability p.
func dropThreshold(p float64) uint64 {
	if p >= 1 {
		return ^uint64(0)
	}
	return uint64(p * (1 << 64))
}

// Dropped reports whether element (row, col) — both global ids — is dropped
// at (seed, step, site) with probability p. Every feature dropout in this
// package decides through dropmask, which is what makes dropout independent
// of partitioning.
func Dropped(p float64, seed, step, site uint64, row, col uint64) bool {
	return !dropmask.Keep(dropKey(seed, step, site), row, col, dropmask.Threshold(p))
}

// dropSpec is one dropout pass: its key, threshold and scale.
type dropSpec struct {
	key   uint64
	thr   int32
	scale float32
}

func newDropSpec(p float64, mode Mode, site uint64) dropSpec {
	s := dropSpec{key: dropKey(mode.Seed, mode.Step, site), thr: dropmask.Threshold(p), scale: float32(1 / (1 - p))}
	if p >= 1 {
		s.scale = 0
	}
	return s
}

// apply sets y[j] = x[j]·scale where element (gid, j) is kept and +0 where
// it is dropped; y may alias x.
func (s *dropSpec) apply(y, x []float32, gid uint64) {
	dropmask.Apply(y, x, s.key, gid, s.thr, s.scale)
}

// keep reports whether element (gid, col) is kept.
func (s *dropSpec) keep(gid, col uint64) bool { return dropmask.Keep(s.key, gid, col, s.thr) }

// Dropout zeroes each element with probability P during training and scales
// the rest by 1/(1−P). On sparse features it drops stored entries, as Kipf's
// sparse_dropout does. Site distinguishes dropout layers of one model.
type Dropout struct {
	P    float64
	Site uint64

	active bool
	spec   dropSpec
	g      *Block
	out    *tensor.Matrix
	dx     *tensor.Matrix
	sparse tensor.CSR
	values []float32
	lazy   lazyDrop
}

// rowGrain is the parallel grain, in rows, of a row-wise pass over cols
// columns.
func rowGrain(cols int) int { return max(1, 8192/max(1, cols)) }

// Forward applies dropout to x, whose rows are g's targets. Outside training,
// or with P = 0, it returns x unchanged.
func (d *Dropout) Forward(g *Block, x Features, mode Mode) Features {
	d.active = mode.Train && d.P > 0
	if !d.active {
		return x
	}
	d.spec, d.g = newDropSpec(d.P, mode, d.Site), g
	s := &d.spec
	if sp := x.Sparse; sp != nil {
		vals := ensureSlice(&d.values, sp.NNZ())
		parallel.For(sp.Rows, 256, rangeTask(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gid := g.globalID(i)
				for p := sp.Offsets[i]; p < sp.Offsets[i+1]; p++ {
					v := float32(0)
					if s.keep(gid, uint64(sp.Indices[p])) {
						v = sp.Value(p) * s.scale
					}
					vals[p] = v
				}
			}
		}))
		d.sparse = tensor.CSR{Rows: sp.Rows, Cols: sp.Cols, Offsets: sp.Offsets, Indices: sp.Indices, Values: vals}
		return Features{Sparse: &d.sparse}
	}
	in := x.values(&d.out) // bf16 rows widened (into out, dropped there in place), or a deferred dropout's copy
	out := ensure(&d.out, in.Rows, in.Cols)
	parallel.For(in.Rows, rowGrain(in.Cols), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s.apply(out.Row(i), in.Row(i), g.globalID(i))
		}
	}))
	return Features{Dense: out}
}

// Backward returns the gradient of a dense Forward's input. The keep
// decisions are recomputed from the hash rather than stored.
func (d *Dropout) Backward(dy *tensor.Matrix) *tensor.Matrix {
	if !d.active {
		return dy
	}
	dx := ensure(&d.dx, dy.Rows, dy.Cols)
	s, g := &d.spec, d.g
	parallel.For(dy.Rows, rowGrain(dy.Cols), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s.apply(dx.Row(i), dy.Row(i), g.globalID(i))
		}
	}))
	return dx
}

// lazyDrop is a dropout pass over dense features that is applied inside the
// products that read them (Features.drop), one block of rows at a time
// (rowReader), and applied again in the backward product instead of
// keeping the dropped copy.
type lazyDrop struct {
	spec dropSpec
	g    *Block
	rows rowReader // reads the input through the dropout
}

// forwardLazy is Forward for the model's own use: dense features (or
// Selected rows of dense features) come back with the dropout deferred to
// the products that read them (Features.drop), so no dropped copy is
// stored. Backward works as after Forward.
func (d *Dropout) forwardLazy(g *Block, x Features, mode Mode) Features {
	if x.Sparse != nil || x.drop != nil || !mode.Train || d.P <= 0 {
		return d.Forward(g, x, mode)
	}
	d.active = true
	d.spec, d.g = newDropSpec(d.P, mode, d.Site), g
	d.lazy.spec, d.lazy.g = d.spec, g
	d.lazy.rows.spec, d.lazy.rows.g = &d.lazy.spec, g
	return Features{Dense: x.Dense, BF16: x.BF16, Selected: x.Selected, drop: &d.lazy}
}
