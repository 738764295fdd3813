package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	bits64 "math/bits"
	"slices"
	"unsafe"
)

// topK keeps, in every row, the entries of largest magnitude, as many as
// fit the requested byte ratio, with their columns: as 2-byte indices
// (4-byte for rows wider than 65,536) or, when that leaves room for more
// entries, as a bitmap of the row (below a ratio of about 10.7 for 2-byte
// indices). At ratio 1 it sends rows whole, as none does. It is biased
// (small entries are always dropped) but keeps the row's energy.
type topK struct {
	mask     []uint64  // the kept columns of the current row
	pairMask [1]uint64 // and of the next, when rows go in pairs
	// Prefix-count path: a row's count per key prefix (zero between
	// rows) and per column the low byte of its prefix.
	counts []uint16
	tags   []uint8
	// Exact path, and the keys of the AVX-512 path.
	keys, cand []uint32
	buckets    []uint8
	hist       [256]uint32
}

func init() { Register("topk", func() Compressor { return &topK{} }) }

func (t *topK) Name() string           { return "topk" }
func (t *topK) FixedRatio(int) float64 { return 0 }

// Caps: top-k's rows encode alone to a fixed size, and a gradient goes
// back at the columns its forward message kept.
func (t *topK) Caps() Caps { return Caps{RowByRow: true, Rows: t, Grad: t} }

// RowBytes is the size of every row's encoding, whatever the key.
func (t *topK) RowBytes(width int, ratio float64) int {
	k, format := topKLayout(width, ratio)
	return topKRowBytes(width, k, format)
}

func indexBytes(width int) int {
	if width <= 1<<16 {
		return 2
	}
	return 4
}

// topKFormat is how a row's kept columns are named.
type topKFormat int

const (
	indexed   topKFormat = iota // an index before each value
	bitmapped                   // a bitmap of the row, then the values
	dense                       // every value: at ratio 1 the row fits whole
)

// topKLayout returns how many entries per row fit ratio and how their
// columns go: the whole row at ratio 1, else as a bitmap (ceil(width/8)
// bytes) or as indices, whichever affords more entries (indices on a tie).
func topKLayout(width int, ratio float64) (k int, f topKFormat) {
	if !(ratio > 1) { // also NaN
		return width, dense
	}
	budget := float64(4*width) / ratio
	byIndex := min(int(budget/float64(4+indexBytes(width))), width)
	byBitmap := min(int(max(budget-float64((width+7)/8), 0)/4), width)
	if byBitmap > byIndex {
		return byBitmap, bitmapped
	}
	return byIndex, indexed
}

func topKRowBytes(width, k int, f topKFormat) int {
	switch f {
	case dense:
		return 4 * width
	case bitmapped:
		return (width+7)/8 + 4*k
	}
	return k * (indexBytes(width) + 4)
}

// Encode sends, per row, the k entries of largest magnitude in column
// order; ties at the k-th magnitude go to the lowest columns, and NaNs
// count as magnitude −1, so every row sends exactly k entries. Indices
// are written interleaved with the values (index, value, index, …); a
// bitmap comes first and the values follow. At ratio 1 rows go whole.
//
// It runs in every halo exchange, so its selection avoids comparisons of
// floats whose outcome the branch predictor cannot guess (what made a
// per-row quickselect cost 9 to 22 ns a value): a magnitude's bit pattern
// orders like the magnitude, so a threshold can be found by counting. On
// AVX-512 a kernel settles the threshold's bits from the top; elsewhere
// the prefix-count path counts a row's values per bit prefix in one pass,
// finds the prefix holding the k-th largest by counting down from the
// largest, and resolves that prefix's few values exactly when only some of
// them are kept. Rows with a NaN, and on the prefix-count path rows of
// 1<<16 values or more, take the exact path, a slower radix select on
// keys that rank NaN.
func (t *topK) Encode(dst []byte, x []float32, rows, width int, ratio float64, _ Key) []byte {
	k, format := topKLayout(width, ratio)
	if format == dense {
		return AppendFloats(dst, x[:rows*width])
	}
	bitmap := format == bitmapped
	rb := topKRowBytes(width, k, format)
	start := len(dst)
	// The writers may store up to 8 bytes past a row: give them room in
	// the capacity.
	dst = slices.Grow(dst, rows*rb+8)
	out := dst[start : start+rows*rb+8]
	dst = dst[:start+rows*rb]
	if k == 0 {
		return dst
	}
	if cap(t.cand) < width {
		t.keys = make([]uint32, (width+15)&^15) // topkSelectAVX512 pads to 16
		t.cand = make([]uint32, width)
		t.buckets = make([]uint8, width)
		t.tags = make([]uint8, width)
		t.mask = make([]uint64, (width+63)/64)
	}
	mask := t.mask[:(width+63)/64]
	// The kernel writes 16 bits per 16 columns: clear what a wider row
	// left above them in the last word.
	clear(mask)
	put := func(i int, mask []uint64) {
		row, o := float32Bits(x[i*width:(i+1)*width]), out[i*rb:(i+1)*rb+8]
		if bitmap {
			putBitmap(o, row, mask, k)
		} else {
			putIndexed(o, row, mask)
		}
	}
	// Rows of up to 64 go two at a time to the pair kernel when they can.
	pairs := bitmapAsm && width <= 64
	for i := 0; i < rows; i++ {
		row := x[i*width : (i+1)*width]
		if pairs && i+1 < rows {
			next := x[(i+1)*width : (i+2)*width]
			if topkSelectPairAVX512(&float32Bits(row)[0], &float32Bits(next)[0], &mask[0], &t.pairMask[0], width, k) {
				put(i, mask)
				put(i+1, t.pairMask[:])
				i++
				continue
			}
		}
		t.keep(mask, row, k)
		put(i, mask)
	}
	return dst
}

// keep sets mask to the k (1 ≤ k < len(row)) columns of row that Encode
// sends.
func (t *topK) keep(mask []uint64, row []float32, k int) {
	bits := float32Bits(row)
	switch {
	case bitmapAsm:
		if _, atLeast := topkSelectAVX512(&t.keys[0], &bits[0], &mask[0], len(bits), k); atLeast >= 0 {
			return // no NaN: the kernel set the mask
		}
	case len(row) >= 1<<16: // the prefix counts are 16-bit
	case k == 1:
		if j, ok := largest(bits); ok {
			clear(mask)
			mask[j/64] = 1 << (j % 64)
			return
		}
	default:
		if thr, atLeast := t.selectByPrefixes(bits, k); atLeast >= 0 { // no NaN
			keptMask(mask, bits, k, thr, atLeast)
			return
		}
	}
	t.exactMask(mask, row, k)
}

// keptMask sets mask to the k columns to send given a threshold with
// atLeast magnitudes (as bit patterns) at or above it: all of those when
// that is k, else those above it and the first equal to it that fit.
func keptMask(mask []uint64, bits []uint32, k int, thr uint32, atLeast int) {
	atLeastMask(mask, bits, thr)
	if atLeast == k {
		return
	}
	above := 0
	for _, b := range bits {
		above += b2i(b&^(1<<31) > thr)
	}
	for j := nthEqual(bits, thr, k-above) + 1; j < len(bits); j++ {
		if bits[j]&^(1<<31) == thr {
			mask[j/64] &^= 1 << (j % 64)
		}
	}
}

// largest returns the column of the largest magnitude, the first of
// equals, in one pass, or false for a row with a NaN.
func largest(bits []uint32) (int, bool) {
	// The largest of |v|<<32 | ^column: ties go to the lowest column.
	best := uint64(0)
	for j, b := range bits {
		best = max(best, uint64(b&^(1<<31))<<32|uint64(^uint32(j)))
	}
	return int(^uint32(best)), best>>32 <= 0x7f800000
}

// The fast path counts together the keys that agree above bit shift: 19
// (16 prefixes per octave of magnitude) for rows up to 64 wide, and one
// bit finer per doubling of the width down to minShift, so that the prefix
// holding the k-th largest usually has a few values.
const minShift = 16

func prefixShift(width int) uint {
	return uint(max(19-max(bitsFor(width)-6, 0), minShift))
}

// selectByPrefixes is the pure-Go selection: it returns the threshold of
// a row's k largest magnitudes (1 < k < len(bits)) and how many are at or
// above it, or −1 for a row with a NaN, as topkSelectAVX512 does (the
// threshold may differ between them when several values give the same k).
func (t *topK) selectByPrefixes(bits []uint32, k int) (thr uint32, atLeast int) {
	if t.counts == nil {
		t.counts = make([]uint16, 1<<(31-minShift))
	}
	shift := prefixShift(len(bits))
	lo, hi := countPrefixes(t.counts, t.tags, bits, shift)
	atLeast = -1
	if hi <= 0x7f800000 { // no NaN
		thr, atLeast = t.prefixThreshold(bits, k, shift, lo>>shift, hi>>shift)
	}
	// Clear the counts: prefix 0 (of zeros), and the prefixes of the other
	// keys, which lie in [lo, hi].
	t.counts[0] = 0
	clear(t.counts[lo>>shift : hi>>shift+1])
	return thr, atLeast
}

// prefixThreshold finds the threshold once a row's prefixes are counted;
// the keys other than 0 have prefixes in [bottom, top].
func (t *topK) prefixThreshold(bits []uint32, k int, shift uint, bottom, top uint32) (thr uint32, atLeast int) {
	counts := t.counts[:top+1]
	p := top
	above, need := 0, k
	// Four prefixes at a time while that keeps above the bottom, then one.
	for p >= bottom+3 {
		n := int(counts[p]) + int(counts[p-1]) + int(counts[p-2]) + int(counts[p-3])
		if n >= need {
			break
		}
		above += n
		need -= n
		p -= 4
	}
	for int(counts[p]) < need {
		above += int(counts[p])
		need -= int(counts[p])
		if p <= bottom {
			p = 0 // skip to the zeros
			continue
		}
		p--
	}
	if int(counts[p]) == need {
		return p << shift, k // keep all of prefix p
	}
	if p == 0 && bottom != 0 { // some of the zeros
		return 0, len(bits)
	}
	// Some of prefix p: those above the need-th largest of its keys, and
	// as many equal to it as fit.
	cand := gatherPrefix(t.cand[:0], bits, t.tags, shift, p, int(counts[p]))
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, u := range cand {
		lo, hi = min(lo, u), max(hi, u)
	}
	thr, a, equal := t.threshold(cand, need, lo, hi)
	return thr, above + a + equal
}

// gatherPrefix appends to cand the n keys |v| whose prefix is p. It finds
// them by their tags, eight at a time, so a scan costs about an
// instruction per value.
func gatherPrefix(cand, bits []uint32, tags []uint8, shift uint, p uint32, n int) []uint32 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	pat := uint64(uint8(p)) * ones
	tags = tags[:len(bits)]
	j := 0
	for ; j+8 <= len(tags); j += 8 {
		y := binary.LittleEndian.Uint64(tags[j:]) ^ pat
		// The bytes of y that are 0, and perhaps some after one that is.
		for z := (y - ones) &^ y & highs; z != 0; z &= z - 1 {
			u := bits[j+bits64.TrailingZeros64(z)/8] &^ (1 << 31)
			if u>>shift == p {
				if cand = append(cand, u); len(cand) == n {
					return cand
				}
			}
		}
	}
	for _, b := range bits[j:] {
		if u := b &^ (1 << 31); u>>shift == p {
			cand = append(cand, u)
		}
	}
	return cand
}

// countPrefixes counts the keys |v| (as bit patterns) per prefix in
// counts, which it expects zero, sets tags to their prefixes' low bytes,
// and returns the smallest nonzero and the largest key. (Not inlined, so
// that lo and hi stay in registers.)
//
//go:noinline
func countPrefixes(counts []uint16, tags []uint8, bits []uint32, shift uint) (lo, hi uint32) {
	counts = counts[:1<<(31-minShift)]
	tags = tags[:len(bits)]
	lo = math.MaxUint32
	for j, b := range bits {
		u := b &^ (1 << 31)
		lo, hi = min(lo, u-1), max(hi, u)
		p := u >> (shift & 31) & (1<<(31-minShift) - 1)
		counts[p]++
		tags[j] = uint8(p)
	}
	return lo + 1, hi
}

// atLeastMask sets bit j%64 of mask[j/64] if bits[j]'s magnitude (as a bit
// pattern) is at least thr (at most 1<<31), and clears it if not. It
// compares two values at a time: in the 32-bit halves of
// (w | 1<<63 | 1<<31) − thr·(1<<32 + 1), bits 31 and 63 are set where
// |v| ≥ thr, and neither half borrows from the other.
func atLeastMask(mask []uint64, bits []uint32, thr uint32) {
	const signs = 1<<63 | 1<<31
	thr2 := uint64(thr) * (1<<32 + 1)
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(bits))), 4*len(bits))
	clear(mask)
	j := 0
	for ; j+8 <= len(bits); j += 8 {
		g := b[4*j : 4*j+32 : 4*j+32]
		d0 := (binary.LittleEndian.Uint64(g) | signs) - thr2
		d1 := (binary.LittleEndian.Uint64(g[8:]) | signs) - thr2
		d2 := (binary.LittleEndian.Uint64(g[16:]) | signs) - thr2
		d3 := (binary.LittleEndian.Uint64(g[24:]) | signs) - thr2
		// Values 0, 2, 4, 6 to bits 0, 2, 4, 6, and 1, 3, 5, 7 to bits
		// 32, 34, 36, 38 and then 1, 3, 5, 7.
		m := d0&signs>>31 | d1&signs>>29 | d2&signs>>27 | d3&signs>>25
		mask[j/64] |= (m | m>>31) & 0xff << (j % 64)
	}
	for ; j < len(bits); j++ {
		mask[j/64] |= uint64(b2i(bits[j]&^(1<<31) >= thr)) << (j % 64)
	}
}

// putIndexed writes the entries of the columns in mask, each a 2-byte
// column and the value (4-byte columns for rows wider than 65,536). It
// writes up to 8 bytes past them.
func putIndexed(out []byte, bits []uint32, mask []uint64) {
	p := 0
	if len(bits) > 1<<16 {
		for w, m := range mask {
			for ; m != 0; m &= m - 1 {
				j := 64*w + bits64.TrailingZeros64(m)
				binary.LittleEndian.PutUint64(out[p:p+8:p+8], uint64(j)|uint64(bits[j])<<32)
				p += 8
			}
		}
		return
	}
	for w, m := range mask {
		for ; m != 0; m &= m - 1 {
			j := 64*w + bits64.TrailingZeros64(m)
			binary.LittleEndian.PutUint64(out[p:p+8:p+8], uint64(j)|uint64(bits[j])<<16)
			p += 6
		}
	}
}

// putBitmap writes mask's first ceil(len(bits)/8) bytes, then the values
// of the k columns in it. Its bitmap words may write up to 8 bytes past
// the row.
func putBitmap(out []byte, bits []uint32, mask []uint64, k int) {
	for w, m := range mask {
		binary.LittleEndian.PutUint64(out[8*w:8*w+8:8*w+8], m)
	}
	mb := (len(bits) + 7) / 8
	if packRows(out[mb:], 0, bits, 1, len(bits), out[:mb], 0, k) >= 0 {
		panic("compress: topk selected other than k columns")
	}
}

// nthEqual returns the column of the n-th key |v| equal to key.
func nthEqual(bits []uint32, key uint32, n int) int {
	for j, b := range bits {
		n -= b2i(b&^(1<<31) == key)
		if n == 0 {
			return j
		}
	}
	panic("compress: topk miscounted its ties")
}

// float32Bits views x as the bit patterns of its values.
func float32Bits(x []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// exactMask sets mask to a row's k columns by ranking every value with
// magKey (which puts NaN last) and selecting with threshold.
func (t *topK) exactMask(mask []uint64, row []float32, k int) {
	keys := t.keys[:len(row)]
	lo, hi := rowKeys(keys, row)
	thr, above, _ := t.threshold(keys, k, lo, hi)
	clear(mask)
	ties := k - above
	for j, key := range keys {
		if key > thr || key == thr && ties > 0 {
			mask[j/64] |= 1 << (j % 64)
			ties -= b2i(key == thr)
		}
	}
}

// rowKeys sets keys[j] = magKey(row[j]) and returns the smallest and the
// largest key. (Not inlined, so that lo and hi stay in registers.)
//
//go:noinline
func rowKeys(keys []uint32, row []float32) (lo, hi uint32) {
	keys = keys[:len(row)]
	lo = math.MaxUint32
	for j, v := range row {
		key := magKey(v)
		keys[j] = key
		lo, hi = min(lo, key), max(hi, key)
	}
	return lo, hi
}

// magKey orders like |v|, with NaN below every magnitude: the bit pattern
// of |v| (which orders like |v| for every non-NaN float) plus one, or 0
// for NaN.
func magKey(v float32) uint32 {
	u := math.Float32bits(v) &^ (1 << 31)
	notNaN := (u - 0x7f800001) >> 31 // 1 unless u > 0x7f800000
	return (u + 1) & -notNaN
}

// threshold returns the k-th largest of keys (1 ≤ k ≤ len(keys), every
// key in [lo, hi]) and how many keys are larger and equal.
//
// It is a radix select whose digit adapts to the data: a histogram of the
// keys over equal slices of [lo, hi] (as many as there are keys, up to
// 256) finds the slice holding the k-th largest, whose keys are gathered
// and searched the same way until they are few or all equal. Counting and
// gathering do not branch on the data, and a slice usually holds a few
// keys, so this takes two or three passes over the row.
func (t *topK) threshold(keys []uint32, k int, lo, hi uint32) (thr uint32, above, equal int) {
	src := keys
	for {
		n := len(src)
		switch {
		case lo == hi:
			return lo, above, n
		case k == 1:
			for _, v := range src {
				equal += b2i(v == hi)
			}
			return hi, above, equal
		case n <= 8:
			// Insertion sort, descending.
			var s [8]uint32
			for i, v := range src {
				j := i
				for ; j > 0 && s[j-1] < v; j-- {
					s[j] = s[j-1]
				}
				s[j] = v
			}
			thr = s[k-1]
			for _, v := range s[:n] {
				above += b2i(v > thr)
				equal += b2i(v == thr)
			}
			return thr, above, equal
		}
		nb := min(1<<bitsFor(n), len(t.hist))
		// Key v goes to slice (v−lo)·nb/(hi−lo+1), by a multiplication:
		// monotone in v, below nb, and lo and hi land in different slices.
		mul := uint64(nb) << 32 / (uint64(hi-lo) + 1)
		h := t.hist[:nb]
		clear(h)
		bk := t.buckets[:len(src)]
		for j, v := range src {
			b := uint8(uint64(v-lo) * mul >> 32)
			bk[j] = b
			h[b]++
		}
		b := nb - 1
		for int(h[b]) < k {
			k -= int(h[b])
			above += int(h[b])
			b--
		}
		// Gather the slice's keys (in place after the first round).
		dst := t.cand[:n]
		m := 0
		for j, v := range src {
			dst[m] = v
			m += b2i(bk[j] == uint8(b))
		}
		src = dst[:m]
		lo, hi = math.MaxUint32, 0
		for _, v := range src {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
}

// bitsFor is the number of bits needed to write n−1.
func bitsFor(n int) int {
	b := 0
	for n-1 >= 1<<b {
		b++
	}
	return b
}

func (t *topK) Decode(out []float32, rows, width int, ratio float64, _ Key, src []byte) error {
	k, format := topKLayout(width, ratio)
	rb := topKRowBytes(width, k, format)
	if want := rows * rb; len(src) != want {
		return sizeError("topk", len(src), want)
	}
	if format == dense {
		readFloats(out[:rows*width], src)
		return nil
	}
	if format == bitmapped && rows > 0 {
		mb := (width + 7) / 8
		if i := unpackRows(out, src, rb, src[mb:], rb, rows, width, k, 1); i >= 0 {
			return bitmapError("topk", src[i*rb:i*rb+mb], width, k)
		}
		return nil
	}
	clear(out[:rows*width])
	if k == 0 {
		return nil
	}
	ib := indexBytes(width)
	for i := range rows {
		row := out[i*width : (i+1)*width]
		for msg := src[i*rb : (i+1)*rb]; len(msg) >= ib+4; msg = msg[ib+4:] {
			j := columnAt(msg, ib)
			if j >= len(row) {
				return fmt.Errorf("compress: topk message names column %d of a %d-wide row", j, width)
			}
			row[j] = math.Float32frombits(binary.LittleEndian.Uint32(msg[ib:]))
		}
	}
	return nil
}

// Columns is top-k's GradCoder: per row, its bitmap, or its k indices
// (nothing at ratio 1, where rows go whole).
func (t *topK) Columns(dst, fwd []byte, rows, width int, ratio float64) ([]byte, error) {
	k, format := topKLayout(width, ratio)
	rb := topKRowBytes(width, k, format)
	if len(fwd) != rows*rb {
		return dst, sizeError("topk forward", len(fwd), rows*rb)
	}
	cb := topKColumnBytes(width, k, format)
	start := len(dst)
	dst = slices.Grow(dst, rows*cb)[:start+rows*cb]
	out := dst[start:]
	switch format {
	case bitmapped:
		for i := range rows {
			copyShort(out[i*cb:(i+1)*cb], fwd[i*rb:i*rb+cb])
		}
	case indexed:
		ib := indexBytes(width)
		for i := range rows {
			o, msg := out[i*cb:(i+1)*cb], fwd[i*rb:(i+1)*rb]
			for p := range k { // (index, value) pairs: keep the indices
				copyShort(o[p*ib:(p+1)*ib], msg[p*(ib+4):p*(ib+4)+ib])
			}
		}
	}
	return dst, nil
}

// copyShort is copy(dst, src) for equal lengths, without a call to memmove
// (which costs more than copying a bitmap of a few words).
func copyShort(dst, src []byte) {
	for len(src) >= 8 {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
		dst, src = dst[8:], src[8:]
	}
	for j, b := range src {
		dst[j] = b
	}
}

func columnsError(got, want int) error {
	return fmt.Errorf("compress: topk forward columns of %d bytes, want %d", got, want)
}

// topKColumnBytes is the size of a row's columns (Columns).
func topKColumnBytes(width, k int, f topKFormat) int {
	switch f {
	case dense:
		return 0
	case bitmapped:
		return (width + 7) / 8
	}
	return k * indexBytes(width)
}

// EncodeGrad is top-k's GradCoder: per row, the k gradient entries at
// the columns the forward row kept, in column order (the whole row at
// ratio 1).
func (t *topK) EncodeGrad(dst []byte, g []float32, rows, width int, ratio float64, cols []byte) []byte {
	k, format := topKLayout(width, ratio)
	if format == dense {
		return AppendFloats(dst, g[:rows*width])
	}
	cb := topKColumnBytes(width, k, format)
	start := len(dst)
	dst = slices.Grow(dst, rows*4*k)[:start+rows*4*k]
	out := dst[start:]
	if len(cols) != rows*cb {
		panic(columnsError(len(cols), rows*cb))
	}
	if k == 0 || rows == 0 {
		return dst
	}
	if format == bitmapped {
		if i := packRows(out, 4*k, float32Bits(g), rows, width, cols, cb, k); i >= 0 {
			panic(bitmapError("topk forward", cols[i*cb:(i+1)*cb], width, k)) // cols did not come from a message Decode accepted
		}
		return dst
	}
	ib := indexBytes(width)
	for i := range rows {
		row, c, o := float32Bits(g[i*width:(i+1)*width]), cols[i*cb:(i+1)*cb], out[i*4*k:]
		for p := range k {
			binary.LittleEndian.PutUint32(o[4*p:], row[columnAt(c[p*ib:], ib)])
		}
	}
	return dst
}

// DecodeGrad is EncodeGrad's inverse, zero at the columns the forward
// message dropped.
func (t *topK) DecodeGrad(out []float32, rows, width int, ratio float64, cols, src []byte) error {
	k, format := topKLayout(width, ratio)
	want := rows * 4 * k // k = width when dense
	if len(src) != want {
		return sizeError("topk gradient", len(src), want)
	}
	if format == dense {
		readFloats(out[:rows*width], src)
		return nil
	}
	cb := topKColumnBytes(width, k, format)
	if len(cols) != rows*cb {
		return columnsError(len(cols), rows*cb)
	}
	if format == bitmapped {
		if i := unpackRows(out, cols, cb, src, 4*k, rows, width, k, 1); i >= 0 {
			return bitmapError("topk forward", cols[i*cb:(i+1)*cb], width, k)
		}
		return nil
	}
	clear(out[:rows*width])
	ib := indexBytes(width)
	for i := range rows {
		row, c, vals := out[i*width:(i+1)*width], cols[i*cb:(i+1)*cb], src[i*4*k:(i+1)*4*k]
		for p := range k {
			j := columnAt(c[p*ib:], ib)
			if j >= width {
				return fmt.Errorf("compress: topk forward columns name column %d of a %d-wide row", j, width)
			}
			row[j] = math.Float32frombits(binary.LittleEndian.Uint32(vals[4*p:]))
		}
	}
	return nil
}

// columnAt reads an index of ib bytes.
func columnAt(msg []byte, ib int) int {
	if ib == 2 {
		return int(binary.LittleEndian.Uint16(msg))
	}
	return int(binary.LittleEndian.Uint32(msg))
}
