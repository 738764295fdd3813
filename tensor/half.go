package tensor

import (
	"math"

	"github.com/graft-gnn/graft/internal/bf16"
	"github.com/graft-gnn/graft/internal/hugepage"
)

// Reduced-precision conversions for messages and checkpoints. Both round to
// nearest even, as hardware converters do, and keep NaN a NaN.

// ToBF16 converts src to bfloat16 bit patterns in dst (len(dst) ≥ len(src)).
func ToBF16(dst []uint16, src []float32) { bf16.Encode(dst, src) }

// FromBF16 converts bfloat16 bit patterns to float32.
func FromBF16(dst []float32, src []uint16) { bf16.Decode(dst, src) }

// ToF16 converts src to IEEE 754 binary16 bit patterns in dst. Values beyond
// the half range become ±Inf; tiny values become subnormals or ±0.
func ToF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = f32ToF16(math.Float32bits(f))
	}
}

func f32ToF16(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp > 142: // ≥ 2^16 after rounding: overflow
		return sign | 0x7c00
	case exp >= 113: // normal half
		h := uint32(exp-112)<<10 | mant>>13
		// round to nearest even on the 13 dropped bits; a carry into the
		// exponent is the correct result (up to Inf)
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	case exp >= 102: // subnormal half
		m := mant | 0x800000
		shift := uint32(126 - exp) // 14..24
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign
}

// FromF16 converts binary16 bit patterns to float32 (exactly).
func FromF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(f16ToF32(h))
	}
}

func f16ToF32(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return sign | 0x7f800000 | mant<<13
	case exp != 0:
		return sign | (exp+112)<<23 | mant<<13
	case mant == 0:
		return sign
	}
	// subnormal: normalise
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return sign | e<<23 | (mant&0x3ff)<<13
}

// MatrixBF16 is a row-major matrix of bfloat16 bit patterns: dense
// features or stored activations at half a Matrix's bytes, widened to
// float32 as they are read.
type MatrixBF16 struct {
	Rows, Cols int
	Data       []uint16
}

// MatrixToBF16 returns m rounded to bfloat16 (nearest, ties to even).
func MatrixToBF16(m *Matrix) *MatrixBF16 {
	h := &MatrixBF16{Rows: m.Rows, Cols: m.Cols, Data: hugepage.Uint16s(len(m.Data))}
	bf16.Encode(h.Data, m.Data)
	return h
}

// Bytes is the size of m's values.
func (m *MatrixBF16) Bytes() int64 { return 2 * int64(len(m.Data)) }

// SelectRows returns the rows ids of m, in order, still in bfloat16.
func (m *MatrixBF16) SelectRows(ids []int32) *MatrixBF16 {
	h := &MatrixBF16{Rows: len(ids), Cols: m.Cols, Data: hugepage.Uint16s(len(ids) * m.Cols)}
	bf16.GatherBF16(h.Data, m.Cols, m.Data, m.Cols, m.Cols, ids)
	return h
}

// Widen returns m widened to float32, exactly.
func (m *MatrixBF16) Widen() *Matrix {
	w := New(m.Rows, m.Cols)
	bf16.Decode(w.Data, m.Data)
	return w
}
