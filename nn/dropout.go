package nn

import (
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

// mix64 is splitmix64's finaliser: a bijection on uint64 whose output bits
// each depend on every input bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// dropKey derives the key of one dropout site at one step.
func dropKey(seed, step, site uint64) uint64 {
	k := mix64(seed + 0x9e3779b97f4a7c15)
	k = mix64(k ^ (step + 0x632be59bd9b4e019))
	return mix64(k ^ (site + 0x8cb92ba72f3d8dd7))
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
// at (seed, step, site) with probability p. Every dropout in this package
// uses it, which is what makes dropout independent of partitioning.
func Dropped(p float64, seed, step, site uint64, row, col uint64) bool {
	return mix64(dropKey(seed, step, site)^(row<<32|col&0xffffffff)) < dropThreshold(p)
}

// Dropout zeroes each element with probability P during training and scales
// the rest by 1/(1−P). On sparse features it drops stored entries, as Kipf's
// sparse_dropout does. Site distinguishes dropout layers of one model.
type Dropout struct {
	P    float64
	Site uint64

	active bool
	words  int      // mask words per row
	mask   []uint64 // bit set = kept
	out    *tensor.Matrix
	dx     *tensor.Matrix
	sparse tensor.CSR
	values []float32
}

// Forward applies dropout to x, whose rows are g's targets. Outside training,
// or with P = 0, it returns x unchanged.
func (d *Dropout) Forward(g *Graph, x Features, mode Mode) Features {
	d.active = mode.Train && d.P > 0
	if !d.active {
		return x
	}
	key, thr := dropKey(mode.Seed, mode.Step, d.Site), dropThreshold(d.P)
	scale := float32(1 / (1 - d.P))
	if d.P >= 1 {
		scale = 0
	}
	if s := x.Sparse; s != nil {
		vals := ensureSlice(&d.values, s.NNZ())
		parallel.For(s.Rows, 256, rangeTask(func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gid := g.globalID(i) << 32
				for p := s.Offsets[i]; p < s.Offsets[i+1]; p++ {
					v := float32(0)
					if mix64(key^(gid|uint64(s.Indices[p]))) >= thr {
						v = s.Value(p) * scale
					}
					vals[p] = v
				}
			}
		}))
		d.sparse = tensor.CSR{Rows: s.Rows, Cols: s.Cols, Offsets: s.Offsets, Indices: s.Indices, Values: vals}
		return Features{Sparse: &d.sparse}
	}
	in := x.Dense
	out := ensure(&d.out, in.Rows, in.Cols)
	d.words = (in.Cols + 63) / 64
	mask := ensureSlice(&d.mask, in.Rows*d.words)
	parallel.For(in.Rows, max(1, 4096/max(1, in.Cols)), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gid := g.globalID(i) << 32
			xr, yr, mr := in.Row(i), out.Row(i), mask[i*d.words:(i+1)*d.words]
			clear(mr)
			for j, v := range xr {
				if mix64(key^(gid|uint64(j))) >= thr {
					yr[j] = v * scale
					mr[j>>6] |= 1 << (j & 63)
				} else {
					yr[j] = 0
				}
			}
		}
	}))
	return Features{Dense: out}
}

// Backward returns the gradient of a dense Forward's input.
func (d *Dropout) Backward(dy *tensor.Matrix) *tensor.Matrix {
	if !d.active {
		return dy
	}
	dx := ensure(&d.dx, dy.Rows, dy.Cols)
	scale := float32(1 / (1 - d.P))
	parallel.For(dy.Rows, max(1, 4096/max(1, dy.Cols)), rangeTask(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dr, xr, mr := dy.Row(i), dx.Row(i), d.mask[i*d.words:(i+1)*d.words]
			for j, v := range dr {
				if mr[j>>6]&(1<<(j&63)) != 0 {
					xr[j] = v * scale
				} else {
					xr[j] = 0
				}
			}
		}
	}))
	return dx
}
