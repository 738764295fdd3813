package compress

import bfloat "github.com/graft-gnn/graft/internal/bf16"

// Delta's messages in pieces (Pieced): a row's coding reads only the row,
// its reconstruction and its skip count, so a message coded a block of
// rows at a time is the message coded whole, and its reconstruction the
// same.

// EncodePieces is Encode of the rows fill writes, a block of rows (64 KiB
// of float32s) at a time into scratch, each coded while it is in cache.
func (d *Delta) EncodePieces(dst []byte, rows, width int, ratio float64, key Key, fill func(lo, hi int, buf []float32)) []byte {
	if key.Backward && d.Grad != nil {
		x := make([]float32, rows*width)
		fill(0, rows, x)
		return d.Grad.Encode(dst, x, rows, width, ratio, key)
	}
	dst, m := d.beginEncode(dst, rows, width, ratio, key)
	chunk := blockRows(width)
	if cap(d.piece) < min(rows, chunk)*width {
		d.piece = make([]float32, min(rows, chunk)*width)
	}
	for lo := 0; lo < rows; lo += chunk {
		hi := min(lo+chunk, rows)
		x := d.piece[:(hi-lo)*width]
		fill(lo, hi, x)
		d.encodePart(dst, &m, x, lo, hi)
	}
	return d.endEncode(dst, &m)
}

// DecodePieces is Decode, a block of rows (64 KiB of float32s) at a time:
// each block of the reconstruction is updated and handed to put as it
// stands (at bf16, widened into scratch).
func (d *Delta) DecodePieces(rows, width int, ratio float64, key Key, src []byte, put func(lo, hi int, rows []float32)) error {
	if key.Backward && d.Grad != nil {
		out := make([]float32, rows*width)
		if err := d.Grad.Decode(out, rows, width, ratio, key, src); err != nil {
			return err
		}
		put(0, rows, out)
		return nil
	}
	at, bits, all, err := d.check(rows, width, ratio, src)
	if err != nil {
		return err
	}
	s := d.stream(key, true, rows, width)
	rb, chunk := rowBytes(bits, width), blockRows(width)
	for lo := 0; lo < rows; lo += chunk {
		hi := min(lo+chunk, rows)
		var rec []float32
		if s.bf16 {
			rec = d.widened((hi - lo) * width)
			bfloat.Decode(rec, s.half[lo*width:hi*width])
		} else {
			rec = s.recon[lo*width : hi*width]
		}
		if all {
			_ = src[at+(hi-lo)*rb-1]
			deltaApplyRows(&rec[0], &rec[0], &src[at], hi-lo, width, bits, false)
			at += (hi - lo) * rb
		} else {
			at = applyRows(rec, s.skipped[lo:hi], src, lo, at, width, bits)
		}
		if s.bf16 {
			bfloat.Encode(s.half[lo*width:hi*width], rec)
			bfloat.Decode(rec, s.half[lo*width:hi*width])
		}
		put(lo, hi, rec)
	}
	if all {
		clear(s.skipped)
	}
	return nil
}
