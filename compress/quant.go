package compress

import (
	"encoding/binary"
	"fmt"
	"math"

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
	for i := range rows {
		row := x[i*width : (i+1)*width]
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, v := range row {
			lo, hi = min(lo, v), max(hi, v)
		}
		step := (hi - lo) / levels
		if width == 0 || !(step > 0) || math.IsInf(float64(step), 0) {
			step = 0 // constant row (or no row): every code is 0
			if width == 0 {
				lo = 0
			}
		}
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(lo))
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(step))
		r := stream{key.hash(true, uint64(i))}
		var acc uint64
		filled := 0
		for _, v := range row {
			var code uint64
			if step > 0 {
				f := (v - lo) / step
				c := float32(math.Floor(float64(f)))
				if r.float() < f-c {
					c++
				}
				code = uint64(min(max(c, 0), levels))
			}
			acc |= code << filled
			filled += q.bits
			if filled >= 8 {
				dst = append(dst, byte(acc))
				acc >>= 8
				filled -= 8
			}
		}
		if filled > 0 {
			dst = append(dst, byte(acc))
		}
	}
	return dst
}

func (q *quantizer) Decode(out []float32, rows, width int, _ float64, _ Key, src []byte) error {
	rb := q.rowBytes(width)
	if len(src) != rows*rb {
		return sizeError(q.Name(), len(src), rows*rb)
	}
	mask := uint64(1)<<q.bits - 1
	for i := range rows {
		b := src[i*rb : (i+1)*rb]
		lo := math.Float32frombits(binary.LittleEndian.Uint32(b))
		step := math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		codes := b[8:]
		row := out[i*width : (i+1)*width]
		var acc uint64
		have, p := 0, 0
		for j := range row {
			if have < q.bits {
				acc |= uint64(codes[p]) << have
				p++
				have += 8
			}
			row[j] = lo + float32(acc&mask)*step
			acc >>= q.bits
			have -= q.bits
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
