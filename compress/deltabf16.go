package compress

import (
	"encoding/binary"

	bfloat "github.com/graft-gnn/graft/internal/bf16"
)

// Delta coding's reconstructions in bfloat16 (Delta.BF16). At bf16
// precision the rows a receiver decodes in a forward pass are rounded to
// bfloat16 as the exchange stores them, so the receiver never uses more
// than a bfloat16 of a reconstruction; keeping it in bfloat16 halves the
// state of every stream, which at many parts outweighs the rest of a
// worker's memory. Each message's rows are coded as at float32 against
// the widened reconstruction, and the sum rounded back: the sender
// computes what the receiver stores, bit for bit, and the next message's
// difference is taken against the rounded value, so the rounding error
// is fed back with the quantisation error.

// SetBF16 keeps the reconstructions in bfloat16 at bf16 precision
// (Streaming): Delta.BF16. The gradients' streams are rounded too, which
// halves the whole state rather than its forward half: at bf16 gradients
// otherwise travel as float32s, but a delta-coded gradient already
// carries the quantisation error of a few-bit difference, far above
// bfloat16's rounding (at most 2⁻⁸ of the value), and that rounding is
// fed back the same way (docs/training.md, "Mixed precision", has the
// accuracy measured).
func (d *Delta) SetBF16(on bool) { d.BF16 = on }

// deltaBlock is how many values of a bfloat16 reconstruction a message
// widens at a time (or one row, if wider): 64 KiB of float32s, which stay
// in cache between the widening, the coding and the rounding back.
const deltaBlock = 1 << 14

// blockRows is how many rows of width a block holds.
func blockRows(width int) int { return max(1, deltaBlock/max(width, 1)) }

// widened returns d's scratch of n float32s.
func (d *Delta) widened(n int) []float32 {
	if cap(d.wide) < n {
		d.wide = make([]float32, n)
	}
	return d.wide[:n]
}

// encodeBF16 is encodePart's coding of rows [lo, hi) of m's message (x
// holding them) against its stream's bfloat16 reconstruction, a block of
// rows at a time: widened into scratch, coded (m.all: by the kernel, every
// row sent, the bitmap already set; else row by row) and rounded back. It
// returns where the rows it wrote end.
func (d *Delta) encodeBF16(dst []byte, m *deltaMessage, x []float32, lo, hi int) int {
	s, width, at := m.s, m.s.width, m.at
	chunk := blockRows(width)
	for a := lo; a < hi; a += chunk {
		b := min(a+chunk, hi)
		half, rec := s.half[a*width:b*width], d.widened((b-a)*width)
		bfloat.Decode(rec, half)
		xa := x[(a-lo)*width : (b-lo)*width]
		if m.all {
			_ = dst[at+(b-a)*m.rb-1]
			deltaEncodeRows(&dst[at], &xa[0], &rec[0], b-a, width, m.bits)
			at += (b - a) * m.rb
		} else {
			at = d.encodeRows(dst, m.start, at, xa, rec, s.skipped[a:b], a, width, m.bits)
		}
		bfloat.Encode(half, rec) // unsent rows widened and rounded back are as they were
	}
	return at
}

// decodeBF16 is Decode's applying of the message src (its bitmap first,
// its rows from src[at:]) to s's bfloat16 reconstruction, a block of rows
// at a time: widened into out, the sent rows added (all: every row sent,
// by the kernel), rounded back into the reconstruction and widened again,
// so that out is the reconstruction.
func (d *Delta) decodeBF16(out []float32, s *deltaStream, src []byte, at, bits int, all bool) {
	rows, width := s.rows, s.width
	rb, chunk := rowBytes(bits, width), blockRows(width)
	for lo := 0; lo < rows; lo += chunk {
		hi := min(lo+chunk, rows)
		half, rec := s.half[lo*width:hi*width], out[lo*width:hi*width]
		bfloat.Decode(rec, half)
		if all {
			deltaApplyRows(&rec[0], &rec[0], &src[at], hi-lo, width, bits, false)
			at += (hi - lo) * rb
		} else {
			at = applyRows(rec, s.skipped[lo:hi], src, lo, at, width, bits)
		}
		bfloat.Encode(half, rec)
		bfloat.Decode(rec, half)
	}
	if all {
		clear(s.skipped)
	}
}

// appendHalfs appends x little-endian.
func appendHalfs(dst []byte, x []uint16) []byte {
	for _, v := range x {
		dst = binary.LittleEndian.AppendUint16(dst, v)
	}
	return dst
}

// readHalfs fills out from the first 2·len(out) bytes of src.
func readHalfs(out []uint16, src []byte) {
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(src[2*i:])
	}
}

// roundFloats fills out with the first len(out) little-endian float32s of
// src rounded to bfloat16 (a float32 state read by a codec that keeps
// bfloat16 ones), a block at a time.
func roundFloats(out []uint16, src []byte) {
	var buf [1024]float32
	for lo := 0; lo < len(out); lo += len(buf) {
		hi := min(lo+len(buf), len(out))
		readFloats(buf[:hi-lo], src[4*lo:])
		bfloat.Encode(out[lo:hi], buf[:hi-lo])
	}
}
