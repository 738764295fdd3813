package nn

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/freelist"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// rowReader reads a dense layer input a block of rows at a time as
// float32: the rows of x, or of x16 widened exactly, with a deferred
// dropout applied when spec is set. The products below read their input
// through it, so that neither a dropped copy of a large input nor a
// float32 copy of bf16 features ever exists whole.
type rowReader struct {
	x    *tensor.Matrix
	x16  *tensor.MatrixBF16
	spec *dropSpec // the dropout, or nil
	g    *Block    // keys the dropout by global id

	buf  []float32 // one block of read rows
	prod []float32 // one block of a product's rows (projectBF16)

	out []float32 // the block being filled starts at row lo
	lo  int
}

// lazyBlockBytes is the size of a block of read rows: small enough to
// stay in cache between reading it and multiplying it.
const lazyBlockBytes = 2 << 20

// readers are the rowReaders of inputs read without a dropout (bf16 ones;
// a dropout's lazyDrop has its own).
var readers freelist.List[rowReader]

// blocks calls use with a reader of f, which must be dense or bf16.
func (f Features) blocks(use func(r *rowReader)) {
	var r *rowReader
	if f.drop != nil {
		r = &f.drop.rows
	} else {
		r = readers.Get()
		defer readers.Put(r)
		r.spec, r.g = nil, nil
	}
	r.x, r.x16 = f.Dense, f.BF16
	use(r)
	r.x, r.x16 = nil, nil
}

func (r *rowReader) rows() int {
	if r.x16 != nil {
		return r.x16.Rows
	}
	return r.x.Rows
}

func (r *rowReader) cols() int {
	if r.x16 != nil {
		return r.x16.Cols
	}
	return r.x.Cols
}

func (r *rowReader) blockRows(cols int) int { return max(64, lazyBlockBytes/4/max(1, cols)) }

// fill returns rows [lo, hi) as they are read: a view of x's when there
// is nothing to apply, else written into the reader's block.
func (r *rowReader) fill(lo, hi int) []float32 {
	c := r.cols()
	if r.x16 == nil && r.spec == nil {
		return r.x.Data[lo*c : hi*c]
	}
	return r.fillInto(ensureSlice(&r.buf, (hi-lo)*c), lo, hi)
}

// fillInto writes rows [lo, hi) as they are read into out and returns it.
func (r *rowReader) fillInto(out []float32, lo, hi int) []float32 {
	r.out, r.lo = out, lo
	parallel.For(hi-lo, rowGrain(r.cols()), r) // no closure: a block is filled hundreds of times per epoch
	r.out = nil
	return out
}

// Run fills rows [a, b) of the current block.
func (r *rowReader) Run(a, b int) {
	c := r.cols()
	for i := a; i < b; i++ {
		out, row := r.out[i*c:(i+1)*c], r.lo+i
		switch {
		case r.x16 != nil:
			bf16.Decode(out, r.x16.Data[row*c:(row+1)*c])
			if r.spec != nil {
				r.spec.apply(out, out, r.g.globalID(row))
			}
		case r.spec != nil:
			r.spec.apply(out, r.x.Row(row), r.g.globalID(row))
		default:
			copy(out, r.x.Row(row))
		}
	}
}

// mul sets dst = X·w, or adds it when acc is set.
func (r *rowReader) mul(p tensor.Products, dst, w *tensor.Matrix, acc bool) {
	n, k := r.rows(), r.cols()
	if k != w.Rows || dst.Rows != n || dst.Cols != w.Cols {
		panic(fmt.Sprintf("nn: blocked product shapes %d×%d·%s into %s", n, k, w.Shape(), dst.Shape()))
	}
	step := r.blockRows(k)
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		a := r.fill(lo, hi)
		p.Gemm(false, false, hi-lo, w.Cols, k, a, k, w.Data, w.Cols, dst.Data[lo*dst.Cols:hi*dst.Cols], dst.Cols, acc)
	}
}

// mulTN sets dw = Xᵀ·dy.
func (r *rowReader) mulTN(p tensor.Products, dw, dy *tensor.Matrix) {
	n, k := r.rows(), r.cols()
	if dy.Rows != n || dw.Rows != k || dw.Cols != dy.Cols {
		panic(fmt.Sprintf("nn: blocked weight gradient shapes (%d×%d)ᵀ·%s into %s", n, k, dy.Shape(), dw.Shape()))
	}
	if n == 0 {
		dw.Zero()
		return
	}
	step := r.blockRows(k)
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		a := r.fill(lo, hi)
		p.Gemm(true, false, k, dy.Cols, hi-lo, a, k, dy.Data[lo*dy.Cols:hi*dy.Cols], dy.Cols, dw.Data, dw.Cols, lo > 0)
	}
}

// projectBF16 sets dst = X·w rounded to bf16, a block of rows at a time,
// so that the float32 product is never held whole either.
func (r *rowReader) projectBF16(pr tensor.Products, dst *tensor.MatrixBF16, w *tensor.Matrix) {
	n, k := r.rows(), r.cols()
	if k != w.Rows || dst.Rows != n || dst.Cols != w.Cols {
		panic(fmt.Sprintf("nn: bf16 projection shapes %d×%d·%s into %d×%d", n, k, w.Shape(), dst.Rows, dst.Cols))
	}
	step := r.blockRows(max(k, w.Cols))
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		a := r.fill(lo, hi)
		p := ensureSlice(&r.prod, (hi-lo)*w.Cols)
		pr.Gemm(false, false, hi-lo, w.Cols, k, a, k, w.Data, w.Cols, p, w.Cols, false)
		bf16.Encode(dst.Data[lo*w.Cols:hi*w.Cols], p)
	}
}

// projectBF16 sets dst = X·w rounded to bf16 (see rowReader.projectBF16);
// sparse features are multiplied a block of rows at a time too.
func (f Features) projectBF16(pr tensor.Products, dst *tensor.MatrixBF16, w *tensor.Matrix) {
	a := f.Sparse
	if a == nil {
		f.blocks(func(r *rowReader) { r.projectBF16(pr, dst, w) })
		return
	}
	if a.Cols != w.Rows || dst.Rows != a.Rows || dst.Cols != w.Cols {
		panic(fmt.Sprintf("nn: bf16 projection shapes %d×%d·%s into %d×%d", a.Rows, a.Cols, w.Shape(), dst.Rows, dst.Cols))
	}
	r := readers.Get()
	defer readers.Put(r)
	step := r.blockRows(w.Cols)
	for lo := 0; lo < a.Rows; lo += step {
		hi := min(lo+step, a.Rows)
		p := tensor.Matrix{Rows: hi - lo, Cols: w.Cols, Data: ensureSlice(&r.prod, (hi-lo)*w.Cols)}
		tensor.SpMMRows(&p, a, lo, hi, w)
		bf16.Encode(dst.Data[lo*w.Cols:hi*w.Cols], p.Data)
	}
}
