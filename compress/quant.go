package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/graft-gnn/graft/tensor"
)

// quantizer sends each row as its minimum, its step, and one bits-wide
// integer per value, rounded stochastically (up with probability equal to
// the fractional part), so the decoded value is an unbiased estimate.
type quantizer struct{ bits int }

func (q *quantizer) Name() string { return fmt.Sprintf("quant%d", q.bits) }

func (q *quantizer) rowBytes(width int) int { return 8 + (width*q.bits+7)/8 }

func (q *quantizer) FixedRatio(width int) float64 {
	return float64(4*width) / float64(q.rowBytes(width))
}

func (q *quantizer) Encode(dst []byte, x []float32, rows, width int, _ float64, key Key) []byte {
	levels := float32(int(1)<<q.bits - 1)
	bits := uint(q.bits)
	rb := q.rowBytes(width)
	start := len(dst)
	dst = slices.Grow(dst, rows*rb)[:start+rows*rb]
	for i := range rows {
		row := x[i*width : (i+1)*width]
		b := dst[start+i*rb : start+(i+1)*rb]
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, v := range row {
			// Plain comparisons: the min and max builtins order NaNs and
			// signed zeros, which costs a branch chain per value.
			if v < lo {
				lo = v
			}
			if v > hi {
				hi = v
			}
		}
		step := (hi - lo) / levels
		if width == 0 || !(step > 0) || math.IsInf(float64(step), 0) {
			step = 0 // constant row (or no row): every code is 0
			if width == 0 {
				lo = 0
			}
		}
		binary.LittleEndian.PutUint32(b, math.Float32bits(lo))
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(step))
		codes := b[8:]
		clear(codes)
		if step == 0 {
			continue
		}
		// Values never straddle a byte: bits divides 8. The rounding
		// draws come 16 bits at a time from a xorshift64 stream seeded by
		// the key and row, so f ≥ 0 rounds up with probability equal to
		// its fraction (to 2⁻¹⁶ of a step).
		rnd := key.hash(true, uint64(i)) | 1
		inv := 1 / step
		var draws uint64
		for j, v := range row {
			if j&3 == 0 {
				rnd ^= rnd << 13
				rnd ^= rnd >> 7
				rnd ^= rnd << 17
				draws = rnd
			} else {
				draws >>= 16
			}
			u := float32(uint16(draws)) * (1.0 / (1 << 16))
			code := byte(min(float32(int32((v-lo)*inv+u)), levels))
			pos := uint(j) * bits
			codes[pos>>3] |= code << (pos & 7)
		}
	}
	return dst
}

func (q *quantizer) Decode(out []float32, rows, width int, _ float64, _ Key, src []byte) error {
	rb := q.rowBytes(width)
	if len(src) != rows*rb {
		return sizeError(q.Name(), len(src), rows*rb)
	}
	bits := uint(q.bits)
	mask := byte(1)<<bits - 1
	for i := range rows {
		b := src[i*rb : (i+1)*rb]
		lo := math.Float32frombits(binary.LittleEndian.Uint32(b))
		step := math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		codes := b[8:]
		row := out[i*width : (i+1)*width]
		if bits == 8 {
			codes = codes[:len(row)]
			for j := range row {
				row[j] = lo + float32(codes[j])*step
			}
			continue
		}
		for j := range row {
			pos := uint(j) * bits
			row[j] = lo + float32(codes[pos>>3]>>(pos&7)&mask)*step
		}
	}
	return nil
}

// bf16 sends each value's top 16 bits, rounded to nearest even.
type bf16 struct{}

func (bf16) Name() string           { return "bf16" }
func (bf16) FixedRatio(int) float64 { return 2 }

func (bf16) Encode(dst []byte, x []float32, rows, width int, _ float64, _ Key) []byte {
	var h [64]uint16
	x = x[:rows*width]
	for len(x) > 0 {
		n := min(len(x), len(h))
		tensor.ToBF16(h[:n], x[:n])
		for _, v := range h[:n] {
			dst = binary.LittleEndian.AppendUint16(dst, v)
		}
		x = x[n:]
	}
	return dst
}

func (bf16) Decode(out []float32, rows, width int, _ float64, _ Key, src []byte) error {
	if len(src) != 2*rows*width {
		return sizeError("bf16", len(src), 2*rows*width)
	}
	for i := range out[:rows*width] {
		out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
	return nil
}
