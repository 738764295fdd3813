package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The products into (and, for SpMMCols, from) column views write the
// columns viewed, the bits the whole-matrix products write, and leave the
// other columns as they were.
func TestSpMMColsWritesTheColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, inner, width, lo, wide = 23, 31, 37, 5, 50
	a := randCSR(r, rows, inner, 0.3, true)
	x := randMatrix(r, inner, width)
	xb := MatrixToBF16(x)
	bits := make([]uint64, inner)
	for k := range bits {
		bits[k] = r.Uint64()
	}
	m := RowMask{Bits: bits, Stride: 1, Rows: a.Indices, Scale: 2}
	xw := randMatrix(r, inner, wide) // x in columns [lo, lo+width) of a wider matrix
	for i := range inner {
		copy(xw.Row(i)[lo:lo+width], x.Row(i))
	}
	for _, tc := range []struct {
		name  string
		whole func(dst *Matrix)
		cols  func(dst ColumnView)
	}{
		{"SpMMCols", func(d *Matrix) { SpMM(d, a, x) }, func(d ColumnView) { SpMMCols(d, a, xw.Columns(lo, lo+width)) }},
		{"SpMMBF16Cols", func(d *Matrix) { SpMMBF16(d, a, xb) }, func(d ColumnView) { SpMMBF16Cols(d, a, xb) }},
		{"SpMMMaskedCols", func(d *Matrix) { SpMMMasked(d, a, x, m) }, func(d ColumnView) { SpMMMaskedCols(d, a, x, m) }},
		{"SpMMMaskedBF16Cols", func(d *Matrix) { SpMMMaskedBF16(d, a, xb, m) }, func(d ColumnView) { SpMMMaskedBF16Cols(d, a, xb, m) }},
	} {
		want := New(rows, width)
		tc.whole(want)
		dst := randMatrix(r, rows, wide)
		was := dst.Clone()
		tc.cols(dst.Columns(lo, lo+width))
		for i := range rows {
			for j := range wide {
				w := was.At(i, j)
				if j >= lo && j < lo+width {
					w = want.At(i, j-lo)
				}
				if math.Float32bits(dst.At(i, j)) != math.Float32bits(w) {
					t.Fatalf("%s: (%d, %d) = %v, want %v", tc.name, i, j, dst.At(i, j), w)
				}
			}
		}
	}
}

func TestColumnsOutOfRangePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("columns [3, 9) of a 2×8 matrix did not panic")
		}
	}()
	New(2, 8).Columns(3, 9)
}

// A view built by hand past its matrix's columns is refused by the
// products rather than read into the next row's columns.
func TestHandBuiltViewOutOfRangePanics(t *testing.T) {
	a := &CSR{Rows: 2, Cols: 2, Offsets: []int64{0, 1, 2}, Indices: []int32{0, 0}, Values: []float32{1, 1}} // row 0 only: its overrun stays inside the data
	wide := New(2, 8)
	for _, v := range []ColumnView{{M: wide, Lo: 6, Width: 4}, {M: wide, Lo: -1, Width: 4}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SpMMCols from columns [%d, %d) of a 2×8 matrix did not panic", v.Lo, v.Lo+v.Width)
				}
			}()
			SpMMCols(New(2, 4).Columns(0, 4), a, v)
		}()
	}
}
