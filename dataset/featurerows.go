package dataset

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/graft-gnn/graft/internal/hugepage"
	"github.com/graft-gnn/graft/tensor"
)

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat32 parses a decimal number exactly as strconv.ParseFloat(s, 32)
// does, without allocating. The forms numeric CSV files use, up to 15
// significant digits and a decimal exponent within ±22, take a fast path
// (Clinger's): the mantissa and the power of ten are exact float64 values,
// so one multiplication or division gives the float64 nearest the number.
// Rounding that to float32 is then the correct float32 unless it lies
// exactly halfway between two float32 values, where the number itself may
// not; such values, subnormals and anything else go to strconv.
func parseFloat32(b []byte) (float32, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, i = b[0] == '-', 1
	}
	var m uint64
	exp, digits := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		m = m*10 + uint64(b[i]-'0')
		if digits++; m >= 1<<53 || digits > 18 {
			return parseFloatSlow(b)
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			m = m*10 + uint64(b[i]-'0')
			exp--
			if digits++; m >= 1<<53 || digits > 18 {
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
	if i != len(b) || exp < -22 || exp > 22 {
		return parseFloatSlow(b)
	}
	v := float64(m)
	if exp < 0 {
		v /= pow10[-exp]
	} else {
		v *= pow10[exp]
	}
	// A float32 midpoint has its 29 bits below float32's precision equal
	// to 1<<28; below 2^-126 float32 is subnormal and has fewer bits.
	if bits := math.Float64bits(v); bits&(1<<29-1) == 1<<28 || v != 0 && v < 0x1p-126 || v > math.MaxFloat32 {
		return parseFloatSlow(b)
	}
	if neg {
		v = -v
	}
	return float32(v), true
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
	cols   int // -1 until the first row
	rows   int
	expect int       // rows expected, if known: dense storage is sized for them
	dense  []float32 // once dense
	// Sparse rows: row r's entries are idx[ptr[r]:ptr[r+1]].
	ptr []int64
	idx []int32
	val []float32
	row []float32 // the row being read
}

// newFeatureRows expects the given number of rows (0: unknown).
func newFeatureRows(expect int) *featureRows {
	return &featureRows{cols: -1, ptr: []int64{0}, expect: expect}
}

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
		if sep != 0 {
			if k := bytes.IndexByte(line[i:], sep); k >= 0 {
				j = i + k
			} else {
				j = len(line)
			}
		} else {
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
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
	if msg := f.room(); msg != "" {
		return msg
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

// room returns a message when the storage is about to grow and the memory
// available could not hold the rows read so far twice (they are copied
// into the matrix returned): a gzipped file inflates up to a thousandfold,
// and when an allocation fails the runtime crashes with a goroutine dump.
// Growth happens a few dozen times, so the memory state is read as often.
func (f *featureRows) room() string {
	growing := len(f.dense)+f.cols > cap(f.dense) && f.dense != nil ||
		f.dense == nil && (len(f.ptr) == cap(f.ptr) || len(f.idx)+f.cols > cap(f.idx))
	if !growing {
		return ""
	}
	return roomForRows(f.rows, 4*int64(len(f.dense))+8*int64(len(f.ptr))+8*int64(len(f.idx)))
}

// roomForRows returns a message when rows feature rows held in held bytes
// could not be held twice in the memory available; below lookAbove it
// does not look.
func roomForRows(rows int, held int64) string {
	if held < lookAbove {
		return ""
	}
	if avail, ok := availableMemory(); ok && 2*held > avail {
		return fmt.Sprintf("%d feature rows so far take %s, and their matrix as much again: more than the %s of memory available", rows, byteSize(held), byteSize(avail))
	}
	return ""
}

// densify switches to dense storage.
func (f *featureRows) densify() {
	f.dense = hugepage.Float32s(max(f.rows, f.expect) * f.cols)[:f.rows*f.cols]
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
