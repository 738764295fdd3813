package dataset

import (
	"fmt"
	"math"
	"strconv"

	"github.com/graft-gnn/graft/tensor"
)

// pow10f32 holds the powers of ten that float32 represents exactly.
var pow10f32 = [...]float32{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// parseFloat32 parses a decimal number exactly as strconv.ParseFloat(s, 32)
// does, without allocating. The forms numeric CSV files use, up to seven
// significant digits and a decimal exponent within ±10, take a fast path:
// the mantissa and the power of ten are both exact float32 values, so one
// multiplication or division rounds correctly. Anything else goes to
// strconv.
func parseFloat32(b []byte) (float32, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, i = b[0] == '-', 1
	}
	var m uint32
	exp, digits := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		m = m*10 + uint32(b[i]-'0')
		if digits++; m >= 1<<24 || digits > 9 {
			return parseFloatSlow(b)
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			m = m*10 + uint32(b[i]-'0')
			exp--
			if digits++; m >= 1<<24 || digits > 9 {
				return parseFloatSlow(b)
			}
		}
	}
	if digits == 0 {
		return parseFloatSlow(b) // "nan", "inf", ".e1", garbage: strconv decides
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		e, j, eneg := 0, i+1, false
		if j < len(b) && (b[j] == '-' || b[j] == '+') {
			eneg, j = b[j] == '-', j+1
		}
		start := j
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9' && j-start < 4; j++ {
			e = e*10 + int(b[j]-'0')
		}
		if j == start || j != len(b) {
			return parseFloatSlow(b)
		}
		if eneg {
			e = -e
		}
		exp, i = exp+e, j
	}
	if i != len(b) || exp < -10 || exp > 10 {
		return parseFloatSlow(b)
	}
	v := float32(m)
	if exp < 0 {
		v /= pow10f32[-exp]
	} else {
		v *= pow10f32[exp]
	}
	if neg {
		v = -v
	}
	return v, true
}

func parseFloatSlow(b []byte) (float32, bool) {
	v, err := strconv.ParseFloat(string(b), 32)
	if err != nil {
		return 0, false
	}
	return float32(v), true
}

// featureRows collects feature rows of one width as they are read, in
// whichever storage is smaller so far: sparse (an index and a value per
// nonzero) while at most half the entries are nonzero, dense after. So a
// bag-of-words file never takes the memory of its dense form, and a dense
// one is never held twice.
type featureRows struct {
	cols  int // -1 until the first row
	rows  int
	dense []float32 // once dense
	// Sparse rows: row r's entries are idx[ptr[r]:ptr[r+1]].
	ptr []int64
	idx []int32
	val []float32
	row []float32 // the row being read
}

func newFeatureRows() *featureRows { return &featureRows{cols: -1, ptr: []int64{0}} }

// parse reads one row of numbers separated by sep (or, with sep 0, by
// blanks) into the row buffer; it returns a message on failure.
func (f *featureRows) parse(line []byte, sep byte) string {
	f.row = f.row[:0]
	i := 0
	for {
		if sep == 0 {
			i = skipBlanks(line, i)
		}
		j := i
		for j < len(line) && line[j] != sep && (sep != 0 || line[j] != ' ' && line[j] != '\t') {
			j++
		}
		tok := line[i:j]
		if sep != 0 {
			tok = trimBlanks(tok)
		}
		v, ok := parseFloat32(tok)
		switch {
		case !ok:
			return fmt.Sprintf("column %d: %q is not a number", len(f.row)+1, clip(string(tok), 40))
		case math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
			return fmt.Sprintf("column %d is %v; features must be finite", len(f.row)+1, v)
		}
		f.row = append(f.row, v)
		if sep == 0 {
			j = skipBlanks(line, j)
			if j == len(line) {
				break
			}
			i = j
			continue
		}
		if j == len(line) {
			break
		}
		i = j + 1
	}
	return ""
}

func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// add appends the row buffer as the next row; it returns a message if its
// width differs from the first row's.
func (f *featureRows) add() string {
	switch {
	case f.cols < 0:
		f.cols = len(f.row)
	case len(f.row) != f.cols:
		return fmt.Sprintf("%d columns, but the first row has %d", len(f.row), f.cols)
	}
	f.rows++
	if f.dense != nil {
		f.dense = append(f.dense, f.row...)
		return ""
	}
	for c, v := range f.row {
		if v != 0 {
			f.idx = append(f.idx, int32(c))
			f.val = append(f.val, v)
		}
	}
	f.ptr = append(f.ptr, int64(len(f.idx)))
	if 2*len(f.idx) > f.rows*f.cols {
		f.densify()
	}
	return ""
}

// densify switches to dense storage.
func (f *featureRows) densify() {
	f.dense = make([]float32, f.rows*f.cols, max(f.rows*f.cols, 1024))
	for r := range f.rows {
		for p := f.ptr[r]; p < f.ptr[r+1]; p++ {
			f.dense[r*f.cols+int(f.idx[p])] = f.val[p]
		}
	}
	f.ptr, f.idx, f.val = nil, nil, nil
}

// matrix returns the rows read, reordered so that row i of the file
// becomes row order[i] of n (order nil: as read, n = rows): a dense
// matrix or, while at most half the entries are nonzero, a sparse one
// (without values when every value is 1).
func (f *featureRows) matrix(order []int32, n int) (*tensor.Matrix, *tensor.CSR) {
	cols := max(f.cols, 0)
	if order == nil {
		n = f.rows
	}
	if f.dense != nil {
		if order == nil {
			return tensor.FromSlice(n, cols, f.dense), nil
		}
		m := tensor.New(n, cols)
		for r, v := range order {
			copy(m.Row(int(v)), f.dense[r*cols:(r+1)*cols])
		}
		return m, nil
	}
	s := &tensor.CSR{Rows: n, Cols: cols, Offsets: f.ptr, Indices: f.idx, Values: f.val}
	if order != nil {
		s = reorderCSR(f, order, n)
	}
	if allOnes(s.Values) {
		s.Values = nil
	}
	return nil, s
}

// reorderCSR builds the CSR whose row order[r] is row r of f.
func reorderCSR(f *featureRows, order []int32, n int) *tensor.CSR {
	src := make([]int32, n) // file row of each node
	for r, v := range order {
		src[v] = int32(r)
	}
	s := &tensor.CSR{Rows: n, Cols: f.cols, Offsets: make([]int64, n+1),
		Indices: make([]int32, 0, len(f.idx)), Values: make([]float32, 0, len(f.val))}
	for v := range n {
		r := src[v]
		s.Indices = append(s.Indices, f.idx[f.ptr[r]:f.ptr[r+1]]...)
		s.Values = append(s.Values, f.val[f.ptr[r]:f.ptr[r+1]]...)
		s.Offsets[v+1] = int64(len(s.Indices))
	}
	return s
}
