package dataparallel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/nn"
	"github.com/graft-gnn/graft/tensor"
)

// rowStore is a matrix of rows, one per owned node, held in float32, in
// bfloat16 (mixed precision), or as sparse rows (bag-of-words features,
// which one process keeps sparse too); its rows travel as they are held,
// and are widened to float32 where a batch gathers them. Sparse rows stay
// sparse: a batch of them is a CSR, whose first layer is a sparse-dense
// product as in one process, and they travel as their entries, not as
// dense rows mostly of zeros.
type rowStore struct {
	f32 *tensor.Matrix
	b16 *tensor.MatrixBF16
	csr *tensor.CSR
}

func (x rowStore) cols() int {
	switch {
	case x.b16 != nil:
		return x.b16.Cols
	case x.csr != nil:
		return x.csr.Cols
	}
	return x.f32.Cols
}

// valueBytes is the bytes of a dense row's value as it travels: 4, or 2
// in bf16.
func (x rowStore) valueBytes() int {
	if x.b16 != nil {
		return 2
	}
	return 4
}

// bytes is a dense store's rows as bytes, a row every valueBytes·cols.
func (x rowStore) bytes() []byte {
	if x.b16 != nil {
		return compress.HalfBytes(x.b16.Data)
	}
	return compress.FloatBytes(x.f32.Data)
}

// copyRow sets dst to row r, in float32 (zeros and entries, when sparse).
func (x rowStore) copyRow(dst []float32, r int) {
	w := len(dst)
	switch {
	case x.b16 != nil:
		bf16.Decode(dst, x.b16.Data[r*w:(r+1)*w])
	case x.csr != nil:
		clear(dst)
		a := x.csr
		for p := a.Offsets[r]; p < a.Offsets[r+1]; p++ {
			dst[a.Indices[p]] = a.Value(p)
		}
	default:
		copy(dst, x.f32.Data[r*w:(r+1)*w])
	}
}

// decodeRow sets dst to a dense row as it travelled, b.
func (x rowStore) decodeRow(dst []float32, b []byte) {
	if x.b16 == nil {
		copy(compress.FloatBytes(dst), b)
		return
	}
	bf16.Decode(dst, compress.Halfs(b))
}

// appendSparseRows appends the sparse store's rows to b as they travel:
// each row's entry count, then every entry's column, then, unless every
// entry is 1, every entry's value, 4 bytes each, little-endian.
func (x rowStore) appendSparseRows(b []byte, rows []int32) []byte {
	a := x.csr
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint32(b, uint32(a.Offsets[r+1]-a.Offsets[r]))
	}
	for _, r := range rows {
		for _, c := range a.Indices[a.Offsets[r]:a.Offsets[r+1]] {
			b = binary.LittleEndian.AppendUint32(b, uint32(c))
		}
	}
	if a.Values != nil {
		for _, r := range rows {
			for _, v := range a.Values[a.Offsets[r]:a.Offsets[r+1]] {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		}
	}
	return b
}

// SparseRowBytes is the mean bytes a row of x takes as appendSparseRows
// sends it: a count, and a column and (unless every entry is 1) a value
// per entry.
func SparseRowBytes(x *tensor.CSR) float64 {
	perEntry := 8.0
	if x.Values == nil {
		perEntry = 4
	}
	return 4 + perEntry*float64(x.NNZ())/float64(max(x.Rows, 1))
}

// sparseRows is n sparse rows as appendSparseRows sent them, checked:
// where row i's entries start in the message's columns and values.
type sparseRows struct {
	start  []int64 // len n+1
	cols   []byte  // 4 bytes an entry
	values []byte  // 4 bytes an entry, or empty: every entry is 1
}

// readSparseRows checks b as n sparse rows of width cols and indexes it
// into r, reusing r's storage.
func readSparseRows(r *sparseRows, b []byte, n, cols int) error {
	if len(b) < 4*n {
		return fmt.Errorf("%d bytes for %d sparse rows", len(b), n)
	}
	r.start = append(r.start[:0], 0)
	for i := range n {
		r.start = append(r.start, r.start[i]+int64(binary.LittleEndian.Uint32(b[4*i:])))
	}
	b = b[4*n:]
	nnz := r.start[n]
	switch int64(len(b)) {
	case 4 * nnz:
		r.cols, r.values = b, nil
	case 8 * nnz:
		r.cols, r.values = b[:4*nnz], b[4*nnz:]
	default:
		return fmt.Errorf("%d bytes for %d sparse rows of %d entries", len(b)+4*n, n, nnz)
	}
	for p := 0; p < len(r.cols); p += 4 {
		if c := binary.LittleEndian.Uint32(r.cols[p:]); c >= uint32(cols) {
			return fmt.Errorf("a sparse row's column %d outside the %d features", int32(c), cols)
		}
	}
	return nil
}

// sparseGather assembles a batch's sparse input rows, some the worker's
// own, the others as their owners sent them, into one CSR, reusing its
// storage from batch to batch.
type sparseGather struct {
	out  tensor.CSR
	vals []float32 // out's values, kept when a batch has none
	srcs []rowSource
	msgs []sparseRows // per worker: the rows it sent
}

// rowSource is where a batch's row comes from: the store's row r, or, when
// msg is set, row r of a message.
type rowSource struct {
	msg *sparseRows
	r   int
}

func (s rowSource) entries(x rowStore) int64 {
	if s.msg != nil {
		return s.msg.start[s.r+1] - s.msg.start[s.r]
	}
	return x.csr.Offsets[s.r+1] - x.csr.Offsets[s.r]
}

// gather returns the rows of srcs in order as one CSR with x's columns;
// its values are nil when every entry of every row is 1, as x's are.
func (g *sparseGather) gather(x rowStore, srcs []rowSource) nn.Features {
	out := &g.out
	out.Rows, out.Cols = len(srcs), x.cols()
	out.Offsets = growTo(out.Offsets, len(srcs)+1)
	out.Offsets[0] = 0
	ones := x.csr.Values == nil
	for i, s := range srcs {
		out.Offsets[i+1] = out.Offsets[i] + s.entries(x)
		if s.msg != nil && s.msg.values != nil {
			ones = false
		}
	}
	nnz := out.Offsets[len(srcs)]
	out.Indices = growTo(out.Indices, int(nnz))
	out.Values = nil
	if !ones {
		g.vals = growTo(g.vals, int(nnz))
		out.Values = g.vals
	}
	for i, s := range srcs {
		at := out.Offsets[i]
		n := out.Offsets[i+1] - at
		if s.msg == nil {
			a := x.csr
			lo := a.Offsets[s.r]
			copy(out.Indices[at:at+n], a.Indices[lo:lo+n])
			if !ones {
				for p := range n {
					out.Values[at+p] = a.Value(lo + p)
				}
			}
			continue
		}
		m, lo := s.msg, s.msg.start[s.r]
		for p := range n {
			out.Indices[at+p] = int32(binary.LittleEndian.Uint32(m.cols[4*(lo+p):]))
		}
		if ones {
			continue
		}
		for p := range n {
			v := float32(1)
			if m.values != nil {
				v = math.Float32frombits(binary.LittleEndian.Uint32(m.values[4*(lo+p):]))
			}
			out.Values[at+p] = v
		}
	}
	return nn.Features{Sparse: out}
}
