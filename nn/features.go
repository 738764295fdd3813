package nn

import (
	"fmt"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/parallel"
	"github.com/graft-gnn/graft/tensor"
)

// Features is a layer input: exactly one of Dense, Sparse, BF16 and
// Selected is set.
// Sparse (bag-of-words) features make the first layer a sparse-dense
// product, which on such data is hundreds of times cheaper than the dense
// one. BF16 holds dense features in bfloat16 (mixed precision, half the
// bytes): the products read them a block of rows at a time, widened to
// float32 exactly, so the arithmetic is float32 on the rounded values.
type Features struct {
	Dense  *tensor.Matrix
	Sparse *tensor.CSR
	BF16   *tensor.MatrixBF16
	// Selected is rows of a larger matrix, left where they lie.
	Selected *Selected

	// drop, when set, is dropout applied to Dense (or BF16) on the fly: the
	// products below read the rows through it block by block, so the
	// dropped copy of a large input never exists in full.
	drop *lazyDrop
}

// Selected is a mini-batch's input rows left in the feature matrix they
// come from rather than copied into the batch: row i is From's row
// IDs[i], and Head holds the first rows (the first block's destinations)
// copied in float32, for a layer that reads them (Model.ReadsSelectedHead;
// nil otherwise). A GCN or GraphSAGE layer that aggregates its input
// before transforming it (aggregateFirst) gathers the rows through its
// operator where they lie, and a SAGE layer reads its destinations' own
// rows from Head: on a large graph the batch's hundreds of thousands of
// input rows are then read once, never copied. A dropout is applied to
// the rows as they are gathered (bf16 ones after their exact widening),
// from a bit per element computed for the batch's rows, and to Head,
// with the values and sums the dropped copy would give. Any other reader
// gets a copy (Model.ReadsSelected says which a pass takes).
type Selected struct {
	From Features // Dense or BF16
	IDs  []int32
	Head *tensor.Matrix
}

// copyRows returns the rows copied in float32 (bf16 widened exactly)
// into *buf.
func (s *Selected) copyRows(buf **tensor.Matrix) *tensor.Matrix {
	cols := s.From.Cols()
	out := ensure(buf, len(s.IDs), cols)
	parallel.For(len(s.IDs), rowGrain(cols), rangeTask(func(lo, hi int) {
		if x := s.From.BF16; x != nil {
			bf16.Gather(out.Data[lo*cols:hi*cols], cols, x.Data, cols, cols, s.IDs[lo:hi])
			return
		}
		x := s.From.Dense
		for i, v := range s.IDs[lo:hi] {
			copy(out.Row(lo+i), x.Row(int(v)))
		}
	}))
	return out
}

// Storage chooses how input features are kept.
type Storage int

const (
	Auto        Storage = iota // sparse when density < SparseDensity
	ForceDense                 // always dense
	ForceSparse                // always CSR
)

// SparseDensity is the density below which Auto keeps features as CSR.
const SparseDensity = 0.1

// ParseStorage parses "auto", "dense" or "sparse".
func ParseStorage(s string) (Storage, error) {
	switch s {
	case "auto", "":
		return Auto, nil
	case "dense":
		return ForceDense, nil
	case "sparse":
		return ForceSparse, nil
	}
	return Auto, fmt.Errorf("nn: unknown feature storage %q (want auto, dense or sparse)", s)
}

// DenseFeatures wraps a dense matrix.
func DenseFeatures(x *tensor.Matrix) Features { return Features{Dense: x} }

// NewFeatures returns x as dense or sparse features according to mode.
func NewFeatures(x *tensor.Matrix, mode Storage) Features {
	if mode == ForceDense || (mode == Auto && density(x) >= SparseDensity) {
		return Features{Dense: x}
	}
	return Features{Sparse: denseToCSR(x)}
}

// NewSparseFeatures returns x as sparse or dense features according to mode.
func NewSparseFeatures(x *tensor.CSR, mode Storage) Features {
	if mode == ForceSparse || (mode == Auto && x.Density() < SparseDensity) {
		return Features{Sparse: x}
	}
	return Features{Dense: x.Dense()}
}

// BF16Features wraps a bfloat16 dense matrix.
func BF16Features(x *tensor.MatrixBF16) Features { return Features{BF16: x} }

// headView holds the header of a view of a matrix's or features' first
// rows, so that taking one allocates nothing.
type headView struct {
	m tensor.Matrix
	a tensor.CSR
	b tensor.MatrixBF16
}

// features returns the first n rows of f, sharing its storage (and its
// deferred dropout, whose rows keep their ids).
func (h *headView) features(f Features, n int) Features {
	if s := f.Selected; s != nil {
		if s.Head == nil { // a layer that does not read them (Model.ReadsSelectedHead)
			return Features{}
		}
		return Features{Dense: h.matrix(s.Head, n)}
	}
	if f.Rows() == n {
		return f
	}
	if a := f.Sparse; a != nil {
		h.a = tensor.CSR{Rows: n, Cols: a.Cols, Offsets: a.Offsets[:n+1], Indices: a.Indices, Values: a.Values}
		return Features{Sparse: &h.a}
	}
	if b := f.BF16; b != nil {
		h.b = tensor.MatrixBF16{Rows: n, Cols: b.Cols, Data: b.Data[:n*b.Cols]}
		return Features{BF16: &h.b, drop: f.drop}
	}
	return Features{Dense: h.matrix(f.Dense, n), drop: f.drop}
}

// matrix returns the first n rows of m, sharing its storage.
func (h *headView) matrix(m *tensor.Matrix, n int) *tensor.Matrix {
	if m.Rows == n {
		return m
	}
	h.m = tensor.Matrix{Rows: n, Cols: m.Cols, Data: m.Data[:n*m.Cols]}
	return &h.m
}

// Rows is the number of rows.
func (f Features) Rows() int {
	switch {
	case f.Selected != nil:
		return len(f.Selected.IDs)
	case f.Sparse != nil:
		return f.Sparse.Rows
	case f.BF16 != nil:
		return f.BF16.Rows
	}
	return f.Dense.Rows
}

// Cols is the number of columns (features).
func (f Features) Cols() int {
	switch {
	case f.Selected != nil:
		return f.Selected.From.Cols()
	case f.Sparse != nil:
		return f.Sparse.Cols
	case f.BF16 != nil:
		return f.BF16.Cols
	}
	return f.Dense.Cols
}

// IsSparse reports whether the features are kept as CSR.
func (f Features) IsSparse() bool { return f.Sparse != nil }

// mul sets dst = X·w, its products at p.
func (f Features) mul(p tensor.Products, dst, w *tensor.Matrix) {
	switch {
	case f.Sparse != nil:
		tensor.SpMM(dst, f.Sparse, w)
	case f.drop != nil || f.BF16 != nil:
		f.blocks(func(r *rowReader) { r.mul(p, dst, w, false) })
	default:
		p.MatMul(dst, f.Dense, w)
	}
}

// mulTN sets dw = Xᵀ·dy, the weight gradient of mul.
func (f Features) mulTN(p tensor.Products, dw, dy *tensor.Matrix) {
	switch {
	case f.Sparse != nil:
		tensor.SpMMT(dw, f.Sparse, dy)
	case f.drop != nil || f.BF16 != nil:
		f.blocks(func(r *rowReader) { r.mulTN(p, dw, dy) })
	default:
		p.MatMulTN(dw, f.Dense, dy)
	}
}

func density(x *tensor.Matrix) float64 {
	if len(x.Data) == 0 {
		return 0
	}
	nz := 0
	for _, v := range x.Data {
		if v != 0 {
			nz++
		}
	}
	return float64(nz) / float64(len(x.Data))
}

func denseToCSR(x *tensor.Matrix) *tensor.CSR {
	a := &tensor.CSR{Rows: x.Rows, Cols: x.Cols, Offsets: make([]int64, x.Rows+1)}
	for i := 0; i < x.Rows; i++ {
		for j, v := range x.Row(i) {
			if v != 0 {
				a.Indices = append(a.Indices, int32(j))
				a.Values = append(a.Values, v)
			}
		}
		a.Offsets[i+1] = int64(len(a.Indices))
	}
	return a
}

// RowNormalize divides every row of x by its sum, in place, as Kipf and
// Welling preprocess bag-of-words features; all-zero rows stay zero.
func RowNormalize(x *tensor.Matrix) {
	for i := 0; i < x.Rows; i++ {
		row := x.Row(i)
		var s float64
		for _, v := range row {
			s += float64(v)
		}
		if s != 0 {
			inv := float32(1 / s)
			for j := range row {
				row[j] *= inv
			}
		}
	}
}

// RowNormalizeCSR is RowNormalize for sparse features. A nil Values (all
// ones) is materialised.
func RowNormalizeCSR(x *tensor.CSR) {
	if x.Values == nil {
		x.Values = make([]float32, x.NNZ())
		for i := range x.Values {
			x.Values[i] = 1
		}
	}
	for i := 0; i < x.Rows; i++ {
		vals := x.Values[x.Offsets[i]:x.Offsets[i+1]]
		var s float64
		for _, v := range vals {
			s += float64(v)
		}
		if s != 0 {
			inv := float32(1 / s)
			for j := range vals {
				vals[j] *= inv
			}
		}
	}
}

// mulAdd sets dst += X·w.
func (f Features) mulAdd(p tensor.Products, dst, w *tensor.Matrix) {
	switch {
	case f.Sparse != nil:
		tensor.SpMMAdd(dst, f.Sparse, w)
	case f.drop != nil || f.BF16 != nil:
		f.blocks(func(r *rowReader) { r.mul(p, dst, w, true) })
	default:
		p.MatMulAdd(dst, f.Dense, w)
	}
}

// values returns the dense values of f as a layer reads them: Dense, or,
// when a dropout was deferred to the products that read it or the values
// are bf16, the dropped or widened copy, written into *buf. It is for
// layers that aggregate their input before multiplying it (see
// aggregateFirst). f must be dense.
func (f Features) values(buf **tensor.Matrix) *tensor.Matrix {
	if f.drop == nil && f.BF16 == nil {
		return f.Dense
	}
	out := ensure(buf, f.Rows(), f.Cols())
	f.blocks(func(r *rowReader) { r.fillInto(out.Data, 0, out.Rows) })
	return out
}
