package dataparallel

import (
	"github.com/graft-gnn/graft/compress"
	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/tensor"
)

// rowStore is a matrix of rows, one per owned node, held in float32 or, at
// bf16 precision, in bfloat16; its rows travel uncompressed as they are
// held, and are widened to float32 where a batch gathers them.
type rowStore struct {
	f32 *tensor.Matrix
	b16 *tensor.MatrixBF16
}

func (x rowStore) cols() int {
	if x.b16 != nil {
		return x.b16.Cols
	}
	return x.f32.Cols
}

// valueBytes is the bytes of a value as it travels: 4, or 2 in bf16.
func (x rowStore) valueBytes() int {
	if x.b16 != nil {
		return 2
	}
	return 4
}

// bytes is the rows' storage as bytes, a row every valueBytes·cols.
func (x rowStore) bytes() []byte {
	if x.b16 != nil {
		return compress.HalfBytes(x.b16.Data)
	}
	return compress.FloatBytes(x.f32.Data)
}

// copyRow sets dst to row r, in float32.
func (x rowStore) copyRow(dst []float32, r int) {
	w := len(dst)
	if x.b16 != nil {
		bf16.Decode(dst, x.b16.Data[r*w:(r+1)*w])
		return
	}
	copy(dst, x.f32.Data[r*w:(r+1)*w])
}

// decodeRow sets dst to a row as it travelled, b.
func (x rowStore) decodeRow(dst []float32, b []byte) {
	if x.b16 == nil {
		copy(compress.FloatBytes(dst), b)
		return
	}
	bf16.Decode(dst, compress.Halfs(b))
}
