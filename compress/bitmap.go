package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	bits64 "math/bits"
	"unsafe"
)

// Rows named by a bitmap, as top-k's bitmap messages and subspace's
// columns are: a row of n values is ⌈n/8⌉ bytes of bitmap (bit j%8 of byte
// j/8 for column j) and the values of the columns it names, in column
// order. packRows and unpackRows move many rows a call, so that the
// per-row cost on AVX-512 is a few instructions per 16 columns.

// packRows writes, for each of rows rows of n values (bits[i·n:]), the
// values at the k columns its bitmap (bitmaps[i·bitmapStride:]) names, in
// column order, to out[i·outStride:]. It returns the first row whose
// bitmap does not name exactly k columns, all below n, or −1; the rows
// before that one are written.
func packRows(out []byte, outStride int, bits []uint32, rows, n int, bitmaps []byte, bitmapStride, k int) int {
	if rows == 0 || n == 0 {
		return emptyRows(rows, k)
	}
	_ = bits[rows*n-1]
	_ = bitmaps[(rows-1)*bitmapStride+(n+7)/8-1]
	if k > 0 {
		_ = out[(rows-1)*outStride+4*k-1]
	}
	if bitmapAsm {
		return packRowsAVX512(unsafe.SliceData(out), outStride, &bits[0], rows, n, &bitmaps[0], bitmapStride, k)
	}
	return packRowsGo(out, outStride, bits, rows, n, bitmaps, bitmapStride, k)
}

// packRowsGo is packRowsAVX512's twin.
func packRowsGo(out []byte, outStride int, bits []uint32, rows, n int, bitmaps []byte, bitmapStride, k int) int {
	mb := (n + 7) / 8
	for i := range rows {
		bm, row, o := bitmaps[i*bitmapStride:i*bitmapStride+mb], bits[i*n:(i+1)*n], out[i*outStride:]
		if bitmapCount(bm, n) != k {
			return i
		}
		p := 0
		for c, b := range bm {
			for ; b != 0; b &= b - 1 {
				binary.LittleEndian.PutUint32(o[p:p+4], row[8*c+bits64.TrailingZeros8(b)])
				p += 4
			}
		}
	}
	return -1
}

// unpackRows writes rows rows of n values into out: row i's values, read
// in order from vals[i·valStride:] and multiplied by scale (so a signalling
// NaN arrives quiet), at the columns its bitmap (bitmaps[i·bitmapStride:])
// names, +0 elsewhere. It returns the first row whose bitmap does not name
// exactly k columns, all below n, or −1; the rows before that one are
// written.
func unpackRows(out []float32, bitmaps []byte, bitmapStride int, vals []byte, valStride int, rows, n, k int, scale float32) int {
	if rows == 0 || n == 0 {
		return emptyRows(rows, k)
	}
	_ = out[rows*n-1]
	_ = bitmaps[(rows-1)*bitmapStride+(n+7)/8-1]
	if k > 0 {
		_ = vals[(rows-1)*valStride+4*k-1]
	}
	if bitmapAsm {
		return unpackRowsAVX512(&out[0], &bitmaps[0], bitmapStride, unsafe.SliceData(vals), valStride, rows, n, k, scale)
	}
	return unpackRowsGo(out, bitmaps, bitmapStride, vals, valStride, rows, n, k, scale)
}

// unpackRowsGo is unpackRowsAVX512's twin.
func unpackRowsGo(out []float32, bitmaps []byte, bitmapStride int, vals []byte, valStride int, rows, n, k int, scale float32) int {
	mb := (n + 7) / 8
	for i := range rows {
		bm := bitmaps[i*bitmapStride : i*bitmapStride+mb]
		if bitmapCount(bm, n) != k {
			return i
		}
		row, v := out[i*n:(i+1)*n], vals[i*valStride:]
		clear(row)
		for c, b := range bm {
			for ; b != 0; b &= b - 1 {
				row[8*c+bits64.TrailingZeros8(b)] = math.Float32frombits(binary.LittleEndian.Uint32(v)) * scale
				v = v[4:]
			}
		}
	}
	return -1
}

// emptyRows is what the row functions return for rows of no columns: the
// first row is bad unless it should name none.
func emptyRows(rows, k int) int {
	if rows > 0 && k != 0 {
		return 0
	}
	return -1
}

// bitmapCount is how many columns a row's bitmap names, or −1 if it names
// any at or past n.
func bitmapCount(bm []byte, n int) int {
	if r := n % 8; r != 0 && bm[len(bm)-1]>>r != 0 {
		return -1
	}
	c := 0
	for ; len(bm) >= 8; bm = bm[8:] {
		c += bits64.OnesCount64(binary.LittleEndian.Uint64(bm))
	}
	for _, b := range bm {
		c += bits64.OnesCount8(b)
	}
	return c
}

// bitmapError says what is wrong with a bitmap row that packRows or
// unpackRows rejected.
func bitmapError(codec string, bm []byte, n, k int) error {
	if c := bitmapCount(bm, n); c >= 0 {
		return fmt.Errorf("compress: %s bitmap names %d columns, want %d", codec, c, k)
	}
	return fmt.Errorf("compress: %s bitmap names columns past a %d-wide row", codec, n)
}
