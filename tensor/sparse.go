package tensor

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/spmm"
)

// SpMM sets dst = a·x for sparse a.
func SpMM(dst *Matrix, a *CSR, x *Matrix) { SpMMCols(dst.all(), a, x.all()) }

// SpMMAdd sets dst += a·x.
func SpMMAdd(dst *Matrix, a *CSR, x *Matrix) {
	d, xv := dst.all(), x.all()
	spmmCheck(d, a, xv, false)
	spmmDo(d, a, xv, true)
}

// SpMMCols is SpMM on column views: dst and x may be columns of wider
// matrices, read and written in place. They must not overlap: the rows
// of x are read while other rows of dst are written.
func SpMMCols(dst ColumnView, a *CSR, x ColumnView) {
	spmmCheck(dst, a, x, false)
	spmmDo(dst, a, x, false)
}

// SpMMT sets dst = aᵀ·x without forming aᵀ. When the same aᵀ is applied
// every step, a cached a.Transpose() with SpMM is usually faster.
func SpMMT(dst *Matrix, a *CSR, x *Matrix) {
	spmmCheck(dst.all(), a, x.all(), true)
	spmm.MulCSRTrans(a.Rows, a.Cols, a.Offsets, a.Indices, a.Values, x.Data, x.Cols, x.Cols, dst.Data, dst.Cols, false)
}

// SpMMRows sets dst to rows [lo, hi) of a·x, so that a product can be
// taken a piece at a time; a row's result is the same bits as SpMM's.
func SpMMRows(dst *Matrix, a *CSR, lo, hi int, x *Matrix) {
	if lo < 0 || hi < lo || hi > a.Rows || x.Rows != a.Cols || dst.Rows != hi-lo || dst.Cols != x.Cols {
		panic(fmt.Sprintf("tensor: spmm rows [%d, %d) of a %d×%d, x %s, dst %s", lo, hi, a.Rows, a.Cols, x.Shape(), dst.Shape()))
	}
	spmm.MulCSR(hi-lo, a.Offsets[lo:hi+1], a.Indices, a.Values, x.Data, x.Cols, x.Cols, dst.Data, dst.Cols, false)
}

// SpMMBF16 sets dst = a·x for x in bfloat16: each row of x is widened
// exactly as it is gathered and the sums are float32, so dst is SpMM's on
// the widened x, bit for bit, at half the bytes gathered.
func SpMMBF16(dst *Matrix, a *CSR, x *MatrixBF16) { SpMMBF16Cols(dst.all(), a, x) }

// SpMMBF16Cols is SpMMBF16 into columns of a wider matrix.
func SpMMBF16Cols(dst ColumnView, a *CSR, x *MatrixBF16) {
	checkBF16(dst, a, x)
	spmm.MulCSRBF16(a.Rows, a.Offsets, a.Indices, a.Values, x.Data, x.Cols, x.Cols, dst.data(), dst.M.Cols, false)
}

// RowMask is a dropout applied to the rows a product gathers, as it
// gathers them (SpMMMasked): the row gathered for entry p of the sparse
// matrix keeps element c, times Scale, when bit c%64 of word
// Bits[Rows[p]·Stride + c/64] is set, and is +0 otherwise.
type RowMask struct {
	Bits   []uint64
	Stride int     // words a row of Bits, at least (x.Cols+63)/64
	Rows   []int32 // the row of Bits of each entry of the sparse matrix
	Scale  float32
}

func (m RowMask) mask() spmm.Mask {
	return spmm.Mask{Bits: m.Bits, Stride: m.Stride, Rows: m.Rows, Scale: m.Scale}
}

// SpMMMasked sets dst = a·x with each row of x dropped by m as a gathers
// it: the same bits as SpMM on a copy of the gathered rows so dropped,
// but no copy is made. The rows of x a gathers may lie in a much larger
// matrix (a batch's input rows in the feature matrix), and m number them
// as the batch does.
func SpMMMasked(dst *Matrix, a *CSR, x *Matrix, m RowMask) { SpMMMaskedCols(dst.all(), a, x, m) }

// SpMMMaskedCols is SpMMMasked into columns of a wider matrix.
func SpMMMaskedCols(dst ColumnView, a *CSR, x *Matrix, m RowMask) {
	spmmCheck(dst, a, x.all(), false)
	spmm.MulCSRMasked(a.Rows, a.Offsets, a.Indices, a.Values, x.Data, x.Cols, x.Cols, m.mask(), dst.data(), dst.M.Cols, false)
}

// SpMMMaskedBF16 is SpMMMasked for x in bfloat16: each gathered row is
// widened exactly, then dropped by m, then multiplied, so dst is SpMM's
// bits on a widened copy of the gathered rows so dropped, but no copy is
// made.
func SpMMMaskedBF16(dst *Matrix, a *CSR, x *MatrixBF16, m RowMask) {
	SpMMMaskedBF16Cols(dst.all(), a, x, m)
}

// SpMMMaskedBF16Cols is SpMMMaskedBF16 into columns of a wider matrix.
func SpMMMaskedBF16Cols(dst ColumnView, a *CSR, x *MatrixBF16, m RowMask) {
	checkBF16(dst, a, x)
	spmm.MulCSRMaskedBF16(a.Rows, a.Offsets, a.Indices, a.Values, x.Data, x.Cols, x.Cols, m.mask(), dst.data(), dst.M.Cols, false)
}

func checkBF16(dst ColumnView, a *CSR, x *MatrixBF16) {
	if x.Rows != a.Cols || dst.Rows() != a.Rows || dst.Width != x.Cols {
		panic(fmt.Sprintf("tensor: spmm shapes: a %d×%d, bf16 x %d×%d, dst %s", a.Rows, a.Cols, x.Rows, x.Cols, dst.shape()))
	}
}

func spmmCheck(dst ColumnView, a *CSR, x ColumnView, trans bool) {
	rows, inner := a.Rows, a.Cols
	if trans {
		rows, inner = inner, rows
	}
	if x.Rows() != inner || dst.Rows() != rows || dst.Width != x.Width {
		t := ""
		if trans {
			t = "ᵀ"
		}
		panic(fmt.Sprintf("tensor: spmm shapes: a%s %d×%d, x %s, dst %s", t, rows, inner, x.shape(), dst.shape()))
	}
}

func spmmDo(dst ColumnView, a *CSR, x ColumnView, acc bool) {
	spmm.MulCSR(a.Rows, a.Offsets, a.Indices, a.Values, x.data(), x.M.Cols, x.Width, dst.data(), dst.M.Cols, acc)
}

// Transpose returns aᵀ as a new CSR with sorted rows (a counting sort, so
// entries of equal column keep their row order).
func (a *CSR) Transpose() *CSR {
	t := &CSR{}
	a.TransposeInto(t)
	return t
}

// TransposeInto sets t to aᵀ, as Transpose, reusing t's storage: a caller
// that transposes a new matrix of similar size every step allocates
// nothing once t has grown.
func (a *CSR) TransposeInto(t *CSR) {
	nnz := a.NNZ()
	t.Rows, t.Cols = a.Cols, a.Rows
	t.Offsets = resize(t.Offsets, a.Cols+1)
	clear(t.Offsets)
	t.Indices = resize(t.Indices, nnz)
	if a.Values != nil {
		t.Values = resize(t.Values, nnz)
	} else {
		t.Values = nil
	}
	for _, c := range a.Indices[:nnz] {
		t.Offsets[c+1]++
	}
	for i := 0; i < a.Cols; i++ {
		t.Offsets[i+1] += t.Offsets[i]
	}
	// t.Offsets[c] counts up to the next free slot of column c, and is
	// put back afterwards.
	for r := 0; r < a.Rows; r++ {
		for p := a.Offsets[r]; p < a.Offsets[r+1]; p++ {
			c := a.Indices[p]
			q := t.Offsets[c]
			t.Offsets[c]++
			t.Indices[q] = int32(r)
			if a.Values != nil {
				t.Values[q] = a.Values[p]
			}
		}
	}
	for i := a.Cols; i > 0; i-- {
		t.Offsets[i] = t.Offsets[i-1]
	}
	t.Offsets[0] = 0
}

// resize returns s with length n, reusing its storage when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Dense returns a as a dense matrix, for tests and small inputs.
func (a *CSR) Dense() *Matrix {
	m := New(a.Rows, a.Cols)
	for r := 0; r < a.Rows; r++ {
		for p := a.Offsets[r]; p < a.Offsets[r+1]; p++ {
			m.Data[r*a.Cols+int(a.Indices[p])] += a.Value(p)
		}
	}
	return m
}

// Density is the fraction of entries stored.
func (a *CSR) Density() float64 {
	if a.Rows == 0 || a.Cols == 0 {
		return 0
	}
	return float64(a.NNZ()) / (float64(a.Rows) * float64(a.Cols))
}
