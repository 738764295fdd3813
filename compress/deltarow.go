package compress

import (
	"encoding/binary"
	"math"
)

// The delta codec's row coding, fused: one pass takes a row's difference
// against the reconstruction and its minimum and maximum, a second writes
// the codes (no branch per code) and adds the decoded difference to the
// reconstruction. Bit for bit the plain coding of commit b1b2f45
// (quantise the difference, then decode it into the reconstruction),
// which delta_ref_test.go keeps to compare against. These Go loops are
// the twins of the AVX-512 kernels (delta_amd64.s) and the AVX2 ones
// (delta_avx2_amd64.s).

// The kernels that code the rows (deltaKernel): the Go loops below, or
// their AVX2 or AVX-512 twins.
const (
	deltaGo = iota
	deltaAVX2
	deltaAVX512
)

// deltaRowHeader is a quantised row's minimum and step as bfloat16s for a
// difference in [lo, hi] (lo and hi +0 for a zero), the minimum and
// reciprocal step the codes are rounded with, and the minimum and step a
// receiver decodes them with: both zero if lo, hi or the step is not
// finite, where every code is 0.
func deltaRowHeader(lo, hi float32, bits int) (lo16, step16 uint16, qlo, inv float32) {
	levels := float32(uint32(1)<<bits - 1)
	lo16 = bf16Down(lo)
	qlo = fromBF16(lo16)
	step16 = bf16Up((hi - qlo) / levels)
	step := fromBF16(step16)
	inv = 1 / step
	if !finite32(qlo) || !finite32(step) || step < 0 || step > 0 && !finite32(inv) {
		lo16, step16 = 0, 0 // NaNs or infinities: send nothing but zeros
	}
	if step16 == 0 {
		inv = 0 // a constant row, or nothing to send: every code is 0
	}
	return lo16, step16, qlo, inv
}

func finite32(v float32) bool { return math.Float32bits(v)&0x7f800000 != 0x7f800000 }

// deltaLevels is the row's 2^bits decoded levels, lo + k·step, each
// product rounded to float32 before the sum (no fused multiply-add).
func deltaLevels(tab *[16]float32, lo, step float32, bits int) {
	for k := range 1 << bits {
		tab[k] = lo + float32(float32(k)*step)
	}
}

// deltaCode is v's code: (v − lo)·inv + ½ truncated, 0 below 1 (and for
// NaN), top above top. The expression is the plain coder's, so a
// platform that fuses its multiply and add (arm64; amd64 at GOAMD64=v3)
// does so in both.
func deltaCode(v, lo, inv, top float32) uint32 {
	q := float32(v-lo)*inv + 0.5
	c := uint32(int32(min(q, top))) // q < 1 and NaN are replaced below
	if !(q >= 1) {
		c = 0
	}
	return c
}

// diffMinMax writes row − rec to diff and returns its minimum and maximum
// as rowMinMax does: NaNs left out (the comparisons are false), a zero
// made +0.
func diffMinMax(diff, row, rec []float32) (lo, hi float32) {
	diff, rec = diff[:len(row)], rec[:len(row)]
	lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
	for j, v := range row {
		d := v - rec[j]
		diff[j] = d
		if d < lo {
			lo = d
		}
		if d > hi {
			hi = d
		}
	}
	return lo + 0, hi + 0
}

// encodeDeltaRow writes row's quantised difference against rec (header
// and codes, rowBytes(bits, len(row)) bytes) to b and adds what it decodes
// to to rec; diff is scratch of len(row).
func encodeDeltaRow(b []byte, row, rec, diff []float32, bits int) {
	if deltaKernel != deltaGo && len(row) > 0 {
		n := len(row)
		_, _ = rec[n-1], b[rowBytes(bits, n)-1]
		deltaEncodeRows(&b[0], &row[0], &rec[0], 1, n, bits)
		return
	}
	lo, hi := diffMinMax(diff, row, rec)
	lo16, step16, qlo, inv := deltaRowHeader(lo, hi, bits)
	binary.LittleEndian.PutUint16(b, lo16)
	binary.LittleEndian.PutUint16(b[2:], step16)
	codes := b[deltaHeader : deltaHeader+(len(row)*bits+7)/8]
	dlo, dstep := fromBF16(lo16), fromBF16(step16)
	top := float32(uint32(1)<<bits - 1)
	diff, rec = diff[:len(row)], rec[:len(row)]
	if bits == 8 {
		codes = codes[:len(diff)]
		for j, v := range diff {
			c := deltaCode(v, qlo, inv, top)
			codes[j] = byte(c)
			rec[j] = rec[j] + (dlo + float32(float32(c)*dstep))
		}
		return
	}
	var tab [16]float32
	deltaLevels(&tab, dlo, dstep, bits)
	switch bits {
	case 1:
		encodeCodes1(codes, diff, rec, &tab, qlo, inv)
	case 2:
		encodeCodes2(codes, diff, rec, &tab, qlo, inv)
	case 4:
		encodeCodes4(codes, diff, rec, &tab, qlo, inv)
	}
}

func encodeCodes1(codes []byte, diff, rec []float32, tab *[16]float32, lo, inv float32) {
	n := len(diff)
	for at := 0; at < n; at += 8 {
		d, r := diff[at:min(at+8, n)], rec[at:min(at+8, n)]
		r = r[:len(d)]
		var c uint32
		for k, v := range d {
			x := deltaCode(v, lo, inv, 1)
			c |= x << k
			r[k] = r[k] + tab[x&1]
		}
		codes[at>>3] = byte(c)
	}
}

func encodeCodes2(codes []byte, diff, rec []float32, tab *[16]float32, lo, inv float32) {
	n, at := len(diff), 0
	for ; at+4 <= n; at += 4 {
		d, r := diff[at:at+4:at+4], rec[at:at+4:at+4]
		c0, c1 := deltaCode(d[0], lo, inv, 3), deltaCode(d[1], lo, inv, 3)
		c2, c3 := deltaCode(d[2], lo, inv, 3), deltaCode(d[3], lo, inv, 3)
		codes[at>>2] = byte(c0 | c1<<2 | c2<<4 | c3<<6)
		r[0] = r[0] + tab[c0&3]
		r[1] = r[1] + tab[c1&3]
		r[2] = r[2] + tab[c2&3]
		r[3] = r[3] + tab[c3&3]
	}
	if at < n {
		var c uint32
		for k, v := range diff[at:n] {
			x := deltaCode(v, lo, inv, 3)
			c |= x << (2 * k)
			rec[at+k] = rec[at+k] + tab[x&3]
		}
		codes[at>>2] = byte(c)
	}
}

func encodeCodes4(codes []byte, diff, rec []float32, tab *[16]float32, lo, inv float32) {
	n, at := len(diff), 0
	for ; at+2 <= n; at += 2 {
		d, r := diff[at:at+2:at+2], rec[at:at+2:at+2]
		c0, c1 := deltaCode(d[0], lo, inv, 15), deltaCode(d[1], lo, inv, 15)
		codes[at>>1] = byte(c0 | c1<<4)
		r[0] = r[0] + tab[c0&15]
		r[1] = r[1] + tab[c1&15]
	}
	if at < n {
		x := deltaCode(diff[at], lo, inv, 15)
		codes[at>>1] = byte(x)
		rec[at] = rec[at] + tab[x&15]
	}
}

// applyDeltaRow adds the decoded row payload b (header and codes) to rec.
func applyDeltaRow(rec []float32, b []byte, bits int) {
	if deltaKernel != deltaGo && len(rec) > 0 {
		_ = b[rowBytes(bits, len(rec))-1]
		deltaApplyRows(&rec[0], &rec[0], &b[0], 1, len(rec), bits, false)
		return
	}
	lo := fromBF16(binary.LittleEndian.Uint16(b))
	step := fromBF16(binary.LittleEndian.Uint16(b[2:]))
	codes := b[deltaHeader : deltaHeader+(len(rec)*bits+7)/8]
	if bits == 8 {
		codes = codes[:len(rec)]
		for j, c := range codes {
			rec[j] = rec[j] + (lo + float32(float32(c)*step))
		}
		return
	}
	var tab [16]float32
	deltaLevels(&tab, lo, step, bits)
	n, at := len(rec), 0
	switch bits {
	case 1:
		for ; at+8 <= n; at += 8 {
			c, r := codes[at>>3], rec[at:at+8:at+8]
			r[0] = r[0] + tab[c&1]
			r[1] = r[1] + tab[c>>1&1]
			r[2] = r[2] + tab[c>>2&1]
			r[3] = r[3] + tab[c>>3&1]
			r[4] = r[4] + tab[c>>4&1]
			r[5] = r[5] + tab[c>>5&1]
			r[6] = r[6] + tab[c>>6&1]
			r[7] = r[7] + tab[c>>7]
		}
	case 2:
		for ; at+4 <= n; at += 4 {
			c, r := codes[at>>2], rec[at:at+4:at+4]
			r[0] = r[0] + tab[c&3]
			r[1] = r[1] + tab[c>>2&3]
			r[2] = r[2] + tab[c>>4&3]
			r[3] = r[3] + tab[c>>6]
		}
	case 4:
		for ; at+2 <= n; at += 2 {
			c, r := codes[at>>1], rec[at:at+2:at+2]
			r[0] = r[0] + tab[c&15]
			r[1] = r[1] + tab[c>>4]
		}
	}
	mask := uint(1)<<bits - 1
	for ; at < n; at++ {
		pos := uint(at * bits)
		rec[at] = rec[at] + tab[uint(codes[pos>>3])>>(pos&7)&mask]
	}
}
