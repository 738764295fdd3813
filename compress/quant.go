package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// quantizer sends each row as its minimum, its step, and one bits-wide
// integer per value, rounded stochastically (up with probability equal to
// the fractional part, to 2⁻¹⁶ of a step), so the decoded value is an
// unbiased estimate. Codes are packed little-endian: value j occupies bits
// [j·bits, (j+1)·bits) of the row's code bytes.
//
// The rounding dither is a pure function of the message key, the row and
// the column, so it is reproducible and the receiver needs no side
// information: value j of a row takes 16 bits of hash32(base, c), with c =
// 16⌊j/32⌋ + j mod 16, the low half for j mod 32 < 16 and the high half
// otherwise (so one 16-lane vector of hashes dithers 32 values).
type quantizer struct{ bits int }

func init() {
	for _, bits := range []int{8, 4, 2, 1} {
		Register(fmt.Sprintf("quant%d", bits), func() Compressor { return &quantizer{bits: bits} })
	}
	Register("bf16", func() Compressor { return bf16{} })
}

func (q *quantizer) Name() string { return fmt.Sprintf("quant%d", q.bits) }

// Caps: none beyond Encode and Decode; a row's dither depends on its place
// in the message.
func (q *quantizer) Caps() Caps { return Caps{} }

func (q *quantizer) rowBytes(width int) int { return 8 + (width*q.bits+7)/8 }

func (q *quantizer) FixedRatio(width int) float64 {
	return float64(4*width) / float64(q.rowBytes(width))
}

// hash32 is the dither generator: a Weyl sequence in the counter c,
// offset by the row's 64-bit base, through Wellons' lowbias32 finaliser.
func hash32(base uint64, c uint32) uint32 {
	x := (uint32(base) + c*0x9e3779b9) ^ uint32(base>>32)
	x ^= x >> 16
	x *= 0x21f0aaad
	x ^= x >> 15
	x *= 0x735a2d97
	x ^= x >> 15
	return x
}

// code rounds (v−lo)/step stochastically: t is (v−lo)·2¹⁶/step in fixed
// point, u the dither's low 16 bits, and the result is clamped to top (the
// last level; NaNs land there too).
func code(v, lo, scale float32, top uint32, u uint64) uint32 {
	return min(uint32(int32((v-lo)*scale)+int32(u&0xffff))>>16, top)
}

// minMax ignores NaNs (plain comparisons: the min and max builtins order
// NaNs and signed zeros, which costs a branch chain per value). New
// extremes are rare after the first few values, so the branches predict.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
	for len(x) >= 4 {
		v := x[:4:4]
		if v[0] < lo {
			lo = v[0]
		}
		if v[0] > hi {
			hi = v[0]
		}
		if v[1] < lo {
			lo = v[1]
		}
		if v[1] > hi {
			hi = v[1]
		}
		if v[2] < lo {
			lo = v[2]
		}
		if v[2] > hi {
			hi = v[2]
		}
		if v[3] < lo {
			lo = v[3]
		}
		if v[3] > hi {
			hi = v[3]
		}
		x = x[4:]
	}
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// rowMinMax is minMax with −0 made +0 (adding zero), so that the vector
// kernel's lane order cannot change the header's bits.
func rowMinMax(x []float32) (lo, hi float32) {
	lo, hi = minMax(x)
	return lo + 0, hi + 0
}

func (q *quantizer) Encode(dst []byte, x []float32, rows, width int, _ float64, key Key) []byte {
	top := uint32(1)<<q.bits - 1
	levels := float32(top)
	rb := q.rowBytes(width)
	start := len(dst)
	dst = slices.Grow(dst, rows*rb)[:start+rows*rb]
	keyHash := key.hash(true) // row i's base is key.hash(true, i)
	if quantAsm && rows > 0 && width > 0 {
		_ = x[rows*width-1]
		quantEncodeRowsAVX512(&dst[start], &x[0], rows, width, rb, keyHash, uint64(q.bits), levels)
		return dst
	}
	for i := range rows {
		row := x[i*width : (i+1)*width]
		b := dst[start+i*rb : start+(i+1)*rb]
		lo, hi := rowMinMax(row)
		step := (hi - lo) / levels
		scale := (1 << 16) / step
		if !(step > 0 && step <= math.MaxFloat32 && scale <= math.MaxFloat32) { // NaN, 0 or ∞
			step = 0 // constant row (or no row): every code is 0
			if width == 0 {
				lo = 0
			}
		}
		binary.LittleEndian.PutUint32(b, math.Float32bits(lo))
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(step))
		codes := b[8:]
		if step == 0 {
			clear(codes)
			continue
		}
		encodeRow(codes, row, 0, lo, scale, top, mix(keyHash^uint64(i)), uint(q.bits))
	}
	return dst
}

// encodeRow writes the codes of row[j0:] (j0 a multiple of 32) to codes,
// 32 values at a time (the blocks of quantEncodeRowsAVX512).
func encodeRow(codes []byte, row []float32, j0 int, lo, scale float32, top uint32, base uint64, nbits uint) {
	var blk [32]uint32
	var h [16]uint32
	for j := j0; j < len(row); j += 32 {
		v := row[j:min(j+32, len(row))]
		c0 := uint32(j>>5) << 4
		for k := range h[:min(len(v), 16)] { // a short row needs fewer
			h[k] = hash32(base, c0+uint32(k))
		}
		if len(v) == 32 {
			v := v[:32:32]
			for k := range 16 {
				blk[k] = code(v[k], lo, scale, top, uint64(h[k]))
				blk[k+16] = code(v[k+16], lo, scale, top, uint64(h[k]>>16))
			}
		} else {
			for k, x := range v {
				blk[k] = code(x, lo, scale, top, uint64(h[k&15]>>(k>>4*16)))
			}
		}
		out := codes[(j-j0)*int(nbits)/8:]
		out = out[:min(len(out), 32*int(nbits)/8)]
		if nbits == 8 {
			for k := range out {
				out[k] = byte(blk[k])
			}
			continue
		}
		var w [4]uint64
		for k := range v {
			pos := uint(k) * nbits
			w[pos>>6&3] |= uint64(blk[k]) << (pos & 63)
		}
		for k := range out {
			out[k] = byte(w[k>>3&3] >> (8 * uint(k&7)))
		}
	}
}

func (q *quantizer) Decode(out []float32, rows, width int, _ float64, _ Key, src []byte) error {
	rb := q.rowBytes(width)
	if len(src) != rows*rb {
		return sizeError(q.Name(), len(src), rows*rb)
	}
	nbits := uint(q.bits)
	if quantAsm && rows > 0 && width > 0 {
		_ = out[rows*width-1]
		quantDecodeRowsAVX512(&out[0], &src[0], rows, width, rb, uint64(nbits))
		return nil
	}
	for i := range rows {
		b := src[i*rb : (i+1)*rb]
		lo := math.Float32frombits(binary.LittleEndian.Uint32(b))
		step := math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		codes := b[8:]
		row := out[i*width : (i+1)*width]
		// lo + float32(c·step), never fused, so the kernel and this loop
		// give the same bits.
		if nbits == 8 {
			codes = codes[:len(row)]
			for j := range row {
				row[j] = lo + float32(float32(codes[j])*step)
			}
			continue
		}
		// The row's 2^bits values, then one table look-up per code.
		var tab [16]float32
		for k := range 1 << nbits {
			tab[k] = lo + float32(float32(k)*step)
		}
		mask := uint8(1)<<nbits - 1
		per := int(64 / nbits)
		for len(row) >= per {
			w := binary.LittleEndian.Uint64(codes)
			o := row[:per]
			for k := range o {
				o[k] = tab[uint8(w)&mask&15]
				w >>= nbits
			}
			row, codes = row[per:], codes[8:]
		}
		var w uint64
		for k, c := range codes {
			w |= uint64(c) << (8 * uint(k) & 63)
		}
		for k := range row {
			row[k] = tab[uint8(w)&mask&15]
			w >>= nbits
		}
	}
	return nil
}

// bf16 sends each value's top 16 bits, rounded to nearest even.
type bf16 struct{}

func (bf16) Name() string           { return "bf16" }
func (bf16) FixedRatio(int) float64 { return 2 }
func (bf16) Caps() Caps             { return Caps{RowByRow: true} }

func (bf16) Encode(dst []byte, x []float32, rows, width int, _ float64, _ Key) []byte {
	x = x[:rows*width]
	start := len(dst)
	dst = slices.Grow(dst, 2*len(x))[:start+2*len(x)]
	out := dst[start:]
	if n := len(x) &^ 15; quantAsm && n > 0 {
		bf16EncodeAVX512(&out[0], x[:n])
		x, out = x[n:], out[2*n:]
	}
	for len(x) >= 4 {
		v := x[:4:4]
		w := uint64(toBF16(v[0])) | uint64(toBF16(v[1]))<<16 | uint64(toBF16(v[2]))<<32 | uint64(toBF16(v[3]))<<48
		binary.LittleEndian.PutUint64(out, w)
		x, out = x[4:], out[8:]
	}
	for i, v := range x {
		binary.LittleEndian.PutUint16(out[2*i:], toBF16(v))
	}
	return dst
}

// toBF16 rounds to nearest even (as tensor.ToBF16); NaNs stay quiet NaNs.
func toBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

func (bf16) Decode(out []float32, rows, width int, _ float64, _ Key, src []byte) error {
	n := rows * width
	if len(src) != 2*n {
		return sizeError("bf16", len(src), 2*n)
	}
	out = out[:n]
	if m := n &^ 15; quantAsm && m > 0 {
		bf16DecodeAVX512(out[:m], &src[0])
		out, src = out[m:], src[2*m:]
	}
	for len(out) >= 4 {
		w := binary.LittleEndian.Uint64(src)
		o := out[:4:4]
		o[0] = math.Float32frombits(uint32(w) << 16)
		o[1] = math.Float32frombits(uint32(w>>16) << 16)
		o[2] = math.Float32frombits(uint32(w>>32) << 16)
		o[3] = math.Float32frombits(uint32(w>>48) << 16)
		out, src = out[4:], src[8:]
	}
	for i := range out {
		out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
	return nil
}

// rowLayout: rows of a fixed size, each after its 8-byte minimum and step
// (an entropy stage codes those bytes apart from the codes).
func (q *quantizer) rowLayout(_, width int, _ float64, _ bool) (prefix, rowBytes, header int) {
	return 0, q.rowBytes(width), 8
}
