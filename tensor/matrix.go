package tensor

import "fmt"

// Matrix is a dense row-major float32 matrix. Element (i, j) is
// Data[i*Cols+j]; rows are contiguous, so a range of rows is a Matrix too.
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// New returns a zeroed rows×cols matrix.
func New(rows, cols int) *Matrix {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("tensor: negative shape %d×%d", rows, cols))
	}
	return &Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// FromSlice wraps data (not copied) as a rows×cols matrix.
func FromSlice(rows, cols int, data []float32) *Matrix {
	if rows*cols != len(data) {
		panic(fmt.Sprintf("tensor: %d values do not fill %d×%d", len(data), rows, cols))
	}
	return &Matrix{Rows: rows, Cols: cols, Data: data}
}

// At returns element (i, j).
func (m *Matrix) At(i, j int) float32 { return m.Data[i*m.Cols+j] }

// Set sets element (i, j).
func (m *Matrix) Set(i, j int, v float32) { m.Data[i*m.Cols+j] = v }

// Row returns row i as a slice sharing m's storage.
func (m *Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// RowRange returns rows [lo, hi) as a matrix sharing m's storage.
func (m *Matrix) RowRange(lo, hi int) *Matrix {
	return &Matrix{Rows: hi - lo, Cols: m.Cols, Data: m.Data[lo*m.Cols : hi*m.Cols]}
}

// Clone returns a deep copy.
func (m *Matrix) Clone() *Matrix {
	c := &Matrix{Rows: m.Rows, Cols: m.Cols, Data: make([]float32, len(m.Data))}
	copy(c.Data, m.Data)
	return c
}

// SameShape reports whether m and o have equal dimensions.
func (m *Matrix) SameShape(o *Matrix) bool { return m.Rows == o.Rows && m.Cols == o.Cols }

// Zero sets every element to 0.
func (m *Matrix) Zero() { clear(m.Data) }

// Shape formats the dimensions as "R×C", for error messages.
func (m *Matrix) Shape() string { return fmt.Sprintf("%d×%d", m.Rows, m.Cols) }

// ColumnView is columns [Lo, Lo+Width) of every row of M: a strided
// matrix, which the sparse products ending in Cols (SpMMCols and others)
// read or write in place. Two operands held side by side in one matrix
// then feed one dense product of twice the depth where two would run.
type ColumnView struct {
	M         *Matrix
	Lo, Width int
}

// Columns returns columns [lo, hi) of m as a view sharing its storage.
func (m *Matrix) Columns(lo, hi int) ColumnView {
	if lo < 0 || hi < lo || hi > m.Cols {
		panic(fmt.Sprintf("tensor: columns [%d, %d) of a %s matrix", lo, hi, m.Shape()))
	}
	return ColumnView{M: m, Lo: lo, Width: hi - lo}
}

// all is every column of m.
func (m *Matrix) all() ColumnView { return ColumnView{M: m, Width: m.Cols} }

// Rows is the number of rows.
func (v ColumnView) Rows() int { return v.M.Rows }

// data returns the view's values from its first element on, at row
// stride v.M.Cols. A view built by hand past its matrix's columns would
// run into the next row's, so it panics.
func (v ColumnView) data() []float32 {
	if v.Lo < 0 || v.Width < 0 || v.Lo+v.Width > v.M.Cols {
		panic(fmt.Sprintf("tensor: columns [%d, %d) of a %s matrix", v.Lo, v.Lo+v.Width, v.M.Shape()))
	}
	if len(v.M.Data) == 0 {
		return nil
	}
	return v.M.Data[v.Lo:]
}

func (v ColumnView) shape() string {
	if v.Lo == 0 && v.Width == v.M.Cols {
		return v.M.Shape()
	}
	return fmt.Sprintf("%d×%d (columns [%d, %d) of %d)", v.M.Rows, v.Width, v.Lo, v.Lo+v.Width, v.M.Cols)
}

// CSR is a sparse matrix in compressed sparse row form. Row i's nonzeros are
// at positions [Offsets[i], Offsets[i+1]) of Indices (column ids) and Values.
// A nil Values means every stored entry is 1, as for an unweighted adjacency.
type CSR struct {
	Rows, Cols int
	Offsets    []int64 // len Rows+1, Offsets[0] = 0, non-decreasing
	Indices    []int32 // column ids, len Offsets[Rows]
	Values     []float32
}

// NNZ is the number of stored entries.
func (a *CSR) NNZ() int {
	if len(a.Offsets) == 0 {
		return 0
	}
	return int(a.Offsets[a.Rows])
}

// Value returns the value of stored entry p.
func (a *CSR) Value(p int64) float32 {
	if a.Values == nil {
		return 1
	}
	return a.Values[p]
}

// Validate checks the structural invariants; every reader and builder calls it
// before handing a CSR to kernels, which trust them.
func (a *CSR) Validate() error {
	if a.Rows < 0 || a.Cols < 0 {
		return fmt.Errorf("csr: negative shape %d×%d", a.Rows, a.Cols)
	}
	if len(a.Offsets) != a.Rows+1 {
		return fmt.Errorf("csr: %d offsets for %d rows, want %d", len(a.Offsets), a.Rows, a.Rows+1)
	}
	if a.Offsets[0] != 0 {
		return fmt.Errorf("csr: offsets[0] = %d, want 0", a.Offsets[0])
	}
	for i := 0; i < a.Rows; i++ {
		if a.Offsets[i+1] < a.Offsets[i] {
			return fmt.Errorf("csr: offsets decrease at row %d (%d > %d)", i, a.Offsets[i], a.Offsets[i+1])
		}
	}
	nnz := a.Offsets[a.Rows]
	if int64(len(a.Indices)) != nnz {
		return fmt.Errorf("csr: %d column ids for %d nonzeros", len(a.Indices), nnz)
	}
	if a.Values != nil && int64(len(a.Values)) != nnz {
		return fmt.Errorf("csr: %d values for %d nonzeros", len(a.Values), nnz)
	}
	for p, c := range a.Indices {
		if c < 0 || int(c) >= a.Cols {
			return fmt.Errorf("csr: column id %d at position %d out of range [0,%d)", c, p, a.Cols)
		}
	}
	return nil
}

// SelectRows returns a new matrix of m's rows listed in rows, in order.
func (m *Matrix) SelectRows(rows []int32) *Matrix {
	out := New(len(rows), m.Cols)
	for i, r := range rows {
		copy(out.Row(i), m.Row(int(r)))
	}
	return out
}

// SelectRows returns a new CSR of a's rows listed in rows, in order.
func (a *CSR) SelectRows(rows []int32) *CSR {
	out := &CSR{Rows: len(rows), Cols: a.Cols, Offsets: make([]int64, len(rows)+1)}
	for i, r := range rows {
		out.Offsets[i+1] = out.Offsets[i] + a.Offsets[r+1] - a.Offsets[r]
	}
	out.Indices = make([]int32, out.Offsets[len(rows)])
	if a.Values != nil {
		out.Values = make([]float32, len(out.Indices))
	}
	for i, r := range rows {
		lo, hi := a.Offsets[r], a.Offsets[r+1]
		copy(out.Indices[out.Offsets[i]:], a.Indices[lo:hi])
		if a.Values != nil {
			copy(out.Values[out.Offsets[i]:], a.Values[lo:hi])
		}
	}
	return out
}
