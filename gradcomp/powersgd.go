package gradcomp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/graft-gnn/graft/comm"
)

// powerSGD sends each weight matrix M (rows × cols) as a rank-r
// factorisation, by one step of power iteration per optimiser step
// (Vogels, Karimireddy and Jaggi, 2019): P = M·Q, all-reduce P,
// orthonormalise its columns, Q = Mᵀ·P, all-reduce Q; the sum over the
// workers is then P·Qᵀ. Q starts from the previous step's (warm start)
// and, at the first step, from random values that every worker draws
// alike. With error feedback M is the gradient plus the residual, and the
// residual becomes M − P·Q_localᵀ, the part of this worker's M outside the
// agreed column space. Vectors (biases), and matrices for which the
// factors would not be smaller, are summed exactly with the factors.
type powerSGD struct {
	rank     int
	feedback bool
	seed     uint64

	shapes   []Shape
	blocks   []psgdBlock
	params   int
	residual []float32 // over the compressed matrices' values, packed
	m        []float32 // M of the compressed matrices, packed
	buf      []float32 // the all-reduce buffer
	qLocal   []float32
}

// psgdBlock is one parameter: where it sits in the gradient, and for a
// compressed matrix, its rank, its values' place in residual and m, and
// its warm-start Q (cols × r, row-major).
type psgdBlock struct {
	off, rows, cols int
	r               int // 0: summed exactly
	at              int
	q               []float32
}

func init() {
	Register("powersgd", func(arg string, f Flags, o Options) (Method, error) {
		r, err := strconv.Atoi(arg)
		if err != nil || r < 1 {
			return nil, fmt.Errorf("powersgd:RANK needs a rank of 1 or more, not %q", arg)
		}
		if f.Scaled {
			return nil, errNoScaled
		}
		return &powerSGD{rank: r, feedback: f.Feedback, seed: o.Seed}, nil
	})
}

func (p *powerSGD) String() string {
	s := "powersgd:" + strconv.Itoa(p.rank)
	if !p.feedback {
		s += ",noef"
	}
	return s
}

func (p *powerSGD) Init(shapes []Shape, workers int) error {
	p.shapes, p.blocks = shapes, make([]psgdBlock, len(shapes))
	off, at := 0, 0
	for i, s := range shapes {
		b := psgdBlock{off: off, rows: s.Rows, cols: s.Cols, at: at}
		if r := min(p.rank, s.Rows, s.Cols); s.Rows > 1 && s.Cols > 1 && r*(s.Rows+s.Cols) < s.Size() {
			b.r = r
			b.q = make([]float32, s.Cols*r)
			rng := rand.New(rand.NewPCG(p.seed, uint64(i)))
			for j := range b.q {
				b.q[j] = float32(rng.NormFloat64())
			}
			at += s.Size()
		}
		p.blocks[i] = b
		off += s.Size()
	}
	p.params = off
	p.residual, p.m = make([]float32, at), make([]float32, at)
	return nil
}

func (p *powerSGD) State() []Tensor {
	var s []Tensor
	if p.feedback {
		s = append(s, Tensor{"residual", p.residual})
	}
	for i, b := range p.blocks {
		if b.r > 0 {
			s = append(s, Tensor{"q" + strconv.Itoa(i), b.q})
		}
	}
	return s
}

func (p *powerSGD) Restore(s []Tensor) error { return restoreInto(p.State(), s) }

func (p *powerSGD) Reduce(c comm.Communicator, site string, g []float32) error {
	if err := checkLen(p.String(), len(g), p.params); err != nil {
		return err
	}
	// First all-reduce: every P, then the values summed exactly.
	buf := p.buf[:0]
	for _, b := range p.blocks {
		if b.r == 0 {
			continue
		}
		m := p.m[b.at : b.at+b.rows*b.cols]
		copy(m, g[b.off:])
		if p.feedback {
			for j, e := range p.residual[b.at : b.at+len(m)] {
				m[j] += e
			}
		}
		buf = mulAdd(buf, m, b.q, b.rows, b.cols, b.r, false)
	}
	for _, b := range p.blocks {
		if b.r == 0 {
			buf = append(buf, g[b.off:b.off+b.rows*b.cols]...)
		}
	}
	buf = append(buf, g[p.params:]...)
	p.buf = buf
	if err := c.AllReduce(site, buf); err != nil {
		return err
	}
	exact := buf
	for _, b := range p.blocks {
		if b.r > 0 {
			orthonormalise(exact[:b.rows*b.r], b.rows, b.r)
			exact = exact[b.rows*b.r:]
		}
	}
	for _, b := range p.blocks {
		if b.r == 0 {
			exact = exact[copy(g[b.off:b.off+b.rows*b.cols], exact):]
		}
	}
	copy(g[p.params:], exact)
	// Second all-reduce: every Q = Mᵀ·P, with this worker's residual
	// taken against its own Q first.
	qs := p.qLocal[:0]
	pf := buf
	for _, b := range p.blocks {
		if b.r == 0 {
			continue
		}
		m := p.m[b.at : b.at+b.rows*b.cols]
		start := len(qs)
		qs = mulAdd(qs, m, pf[:b.rows*b.r], b.rows, b.cols, b.r, true)
		if p.feedback {
			reconstruct(p.residual[b.at:b.at+len(m)], pf[:b.rows*b.r], qs[start:], b.rows, b.cols, b.r)
			for j, v := range m {
				p.residual[b.at+j] = v - p.residual[b.at+j]
			}
		}
		pf = pf[b.rows*b.r:]
	}
	p.qLocal = qs
	if err := c.AllReduce(site, qs); err != nil {
		return err
	}
	pf = buf
	for _, b := range p.blocks {
		if b.r == 0 {
			continue
		}
		q := qs[:b.cols*b.r]
		reconstruct(g[b.off:b.off+b.rows*b.cols], pf[:b.rows*b.r], q, b.rows, b.cols, b.r)
		for k := range b.r { // a zero column would stay zero: keep the old one
			var norm float64
			for j := range b.cols {
				norm += float64(q[j*b.r+k]) * float64(q[j*b.r+k])
			}
			if norm > 0 && !math.IsInf(norm, 0) && !math.IsNaN(norm) {
				for j := range b.cols {
					b.q[j*b.r+k] = q[j*b.r+k]
				}
			}
		}
		qs, pf = qs[b.cols*b.r:], pf[b.rows*b.r:]
	}
	return nil
}

// mulAdd appends M·Q (rows × r) or, transposed, Mᵀ·P (cols × r) for the
// rows × cols matrix m, accumulating in float64.
func mulAdd(dst, m, f []float32, rows, cols, r int, transposed bool) []float32 {
	if !transposed {
		acc := make([]float64, r)
		for i := range rows {
			clear(acc)
			row := m[i*cols : (i+1)*cols]
			for j, v := range row {
				for k := range r {
					acc[k] += float64(v) * float64(f[j*r+k])
				}
			}
			for k := range r {
				dst = append(dst, float32(acc[k]))
			}
		}
		return dst
	}
	acc := make([]float64, cols*r)
	for i := range rows {
		row := m[i*cols : (i+1)*cols]
		for j, v := range row {
			for k := range r {
				acc[j*r+k] += float64(v) * float64(f[i*r+k])
			}
		}
	}
	for _, v := range acc {
		dst = append(dst, float32(v))
	}
	return dst
}

// reconstruct writes P·Qᵀ (rows × cols) to out.
func reconstruct(out, pf, q []float32, rows, cols, r int) {
	for i := range rows {
		for j := range cols {
			var s float64
			for k := range r {
				s += float64(pf[i*r+k]) * float64(q[j*r+k])
			}
			out[i*cols+j] = float32(s)
		}
	}
}

// orthonormalise makes the r columns of the rows × r matrix pf orthonormal
// by Gram–Schmidt in float64; a column that is (numerically) in the span
// of the ones before becomes zero.
func orthonormalise(pf []float32, rows, r int) {
	cols := make([][]float64, r)
	for k := range r {
		v := make([]float64, rows)
		for i := range rows {
			v[i] = float64(pf[i*r+k])
		}
		for _, u := range cols[:k] {
			var dot float64
			for i := range rows {
				dot += v[i] * u[i]
			}
			for i := range rows {
				v[i] -= dot * u[i]
			}
		}
		var norm float64
		for _, x := range v {
			norm += x * x
		}
		norm = math.Sqrt(norm)
		if norm > 1e-30 && !math.IsInf(norm, 0) {
			for i := range v {
				v[i] /= norm
			}
		} else {
			clear(v)
		}
		cols[k] = v
		for i := range rows {
			pf[i*r+k] = float32(v[i])
		}
	}
}
