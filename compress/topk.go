package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	bits64 "math/bits"
	"slices"
	"unsafe"
)

// topK keeps, in every row, the entries of largest magnitude with their
// column indices, as many as fit the requested byte ratio. It is biased
// (small entries are always dropped) but keeps the row's energy.
type topK struct {
	// Fast path: a row's count per key prefix (zero between rows), per
	// column the low byte of its prefix, the kept columns, and the last
	// row's entries with room past them.
	counts []uint16
	tags   []uint8
	mask   []uint64
	last   []byte
	// Exact path.
	keys, cand []uint32
	buckets    []uint8
	sel        []int32
	hist       [256]uint32
}

func (t *topK) Name() string           { return "topk" }
func (t *topK) FixedRatio(int) float64 { return 0 }

func indexBytes(width int) int {
	if width <= 1<<16 {
		return 2
	}
	return 4
}

// kept is the entries per row that fit ratio: each costs 4 bytes of value
// plus its index.
func (t *topK) kept(width int, ratio float64) int {
	if ratio < 1 {
		ratio = 1
	}
	k := int(float64(4*width) / (ratio * float64(4+indexBytes(width))))
	return min(k, width)
}

// Encode sends, per row, the k entries of largest magnitude in column
// order; ties at the k-th magnitude go to the lowest columns, and NaNs
// count as magnitude −1, so every row sends exactly k entries.
//
// It runs in every halo exchange, so it avoids what made a per-row
// quickselect slow (9 to 22 ns a value): comparisons of floats whose
// outcome the branch predictor cannot guess. A magnitude's bit pattern
// orders like the magnitude, so the fast path (encodeRow) counts a row's
// values per bit prefix in one pass, finds the prefix holding the k-th
// largest by counting down from the largest, resolves that prefix's few
// values exactly when only some of them are kept, and writes the entries
// at least at the threshold in a second pass; neither pass branches on
// the data. Rows with a NaN, and rows of 1<<16 values or more, take the
// exact path (exactRow), a slower radix select on keys that rank NaN.
func (t *topK) Encode(dst []byte, x []float32, rows, width int, ratio float64, _ Key) []byte {
	k := t.kept(width, ratio)
	ib := indexBytes(width)
	start := len(dst)
	dst = slices.Grow(dst, rows*k*(ib+4))[:start+rows*k*(ib+4)]
	if k == 0 {
		return dst
	}
	if cap(t.keys) < width {
		t.keys = make([]uint32, width)
		t.cand = make([]uint32, width)
		t.buckets = make([]uint8, width)
		t.sel = make([]int32, width)
		t.tags = make([]uint8, width)
		t.mask = make([]uint64, (width+63)/64)
		t.last = make([]byte, 6*width+8)
	}
	if t.counts == nil {
		t.counts = make([]uint16, 1<<(31-minShift))
	}
	out := dst[start:]
	shift := prefixShift(width)
	for i := range rows {
		row := x[i*width : (i+1)*width]
		room := out[i*k*(ib+4):]
		if width >= 1<<16 || !t.encodeRow(room, row, k, shift) {
			t.exactRow(room[:k*(ib+4)], row, k)
		}
	}
	return dst
}

// The fast path counts together the keys that agree above bit shift: 19
// (16 prefixes per octave of magnitude) for rows up to 64 wide, and one
// bit finer per doubling of the width down to minShift, so that the prefix
// holding the k-th largest usually has a few values.
const minShift = 16

func prefixShift(width int) uint {
	return uint(max(19-max(bitsFor(width)-6, 0), minShift))
}

// encodeRow writes a row's k entries (with 2-byte indices) at the start of
// room by the fast path, or reports false for a row with a NaN. It may
// write up to 8 bytes past the entries, where room allows.
func (t *topK) encodeRow(room []byte, row []float32, k int, shift uint) bool {
	bits := float32Bits(row)
	if k == 1 {
		return putLargest(room, bits)
	}
	lo, hi := countPrefixes(t.counts, t.tags, bits, shift)
	ok := hi <= 0x7f800000 // no NaN
	if ok && len(room) >= 6*k+8 {
		t.putRow(room[:6*k+8], bits, k, shift, lo>>shift, hi>>shift)
	} else if ok { // the last row
		t.putRow(t.last[:6*k+8], bits, k, shift, lo>>shift, hi>>shift)
		copy(room, t.last[:6*k])
	}
	// Clear the counts: prefix 0 (of zeros), and the prefixes of the other
	// keys, which lie in [lo, hi].
	t.counts[0] = 0
	clear(t.counts[lo>>shift : hi>>shift+1])
	return ok
}

// putLargest is encodeRow for k = 1, in one pass: it writes the entry of
// largest magnitude, the first of equals, or reports false for a row with
// a NaN.
func putLargest(out []byte, bits []uint32) bool {
	// The largest of |v|<<32 | ^column: ties go to the lowest column.
	best := uint64(0)
	for j, b := range bits {
		best = max(best, uint64(b&^(1<<31))<<32|uint64(^uint32(j)))
	}
	if best>>32 > 0x7f800000 {
		return false // a NaN
	}
	j := int(^uint32(best))
	binary.LittleEndian.PutUint16(out, uint16(j))
	binary.LittleEndian.PutUint32(out[2:], bits[j])
	return true
}

// putRow writes the k entries of a row without NaN once its prefixes are
// counted; the keys other than 0 have prefixes in [bottom, top]. It
// writes up to 8 bytes past the entries.
func (t *topK) putRow(out []byte, bits []uint32, k int, shift uint, bottom, top uint32) {
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
	thr := p << shift // keep all of prefix p
	if int(counts[p]) == need {
		t.putAtLeast(out, bits, 0, thr)
		return
	}
	// Keep some of prefix p: those above the need-th largest of its keys,
	// and as many equal to it as fit, from the left.
	ties := need // prefix 0 without other keys than 0
	if p > 0 || bottom == 0 {
		cand := gatherPrefix(t.cand[:0], bits, t.tags, shift, p, int(counts[p]))
		lo, hi := uint32(math.MaxUint32), uint32(0)
		for _, u := range cand {
			lo, hi = min(lo, u), max(hi, u)
		}
		var a, equal int
		thr, a, equal = t.threshold(cand, need, lo, hi)
		ties = need - a
		if ties == equal {
			t.putAtLeast(out, bits, 0, thr)
			return
		}
	}
	// Split the row after the ties-th key equal to thr: the left part
	// keeps keys ≥ thr, the right part keys > thr.
	c := nthEqual(bits, thr, ties) + 1
	q := t.putAtLeast(out, bits[:c], 0, thr)
	t.putAtLeast(out[q:], bits[c:], c, thr+1)
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

// putAtLeast writes the entries of the values whose magnitude (as a bit
// pattern) is at least thr, with columns from first, and returns the bytes
// written. It writes up to 8 bytes past them.
func (t *topK) putAtLeast(out []byte, bits []uint32, first int, thr uint32) int {
	// Writing every entry costs about as much as comparing (atLeast) and
	// writing half of them one by one (putMask).
	if 2*len(out) > 6*len(bits) {
		return putMany(out, bits, first, thr)
	}
	mask := t.mask[:(len(bits)+63)/64]
	atLeast(mask, bits, thr)
	return putMask(out, bits, first, mask)
}

// putMany is putAtLeast for many entries: it writes every entry and
// advances only past those kept, so it does not branch.
func putMany(out []byte, bits []uint32, first int, thr uint32) int {
	p := 0
	for j, b := range bits {
		binary.LittleEndian.PutUint64(out[p:p+8:p+8], uint64(first+j)|uint64(b)<<16)
		p += 6 * b2i(b&^(1<<31) >= thr)
	}
	return p
}

// atLeast sets bit j%64 of mask[j/64] if bits[j]'s magnitude (as a bit
// pattern) is at least thr (at most 1<<31), and clears it if not. It
// compares two values at a time: in the 32-bit halves of
// (w | 1<<63 | 1<<31) − thr·(1<<32 + 1), bits 31 and 63 are set where
// |v| ≥ thr, and neither half borrows from the other.
func atLeast(mask []uint64, bits []uint32, thr uint32) {
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

// putMask writes the entries of the columns in mask, with columns from
// first, and returns the bytes written. It writes 2 bytes past them.
func putMask(out []byte, bits []uint32, first int, mask []uint64) int {
	p := 0
	for w, m := range mask {
		for ; m != 0; m &= m - 1 {
			j := 64*w + bits64.TrailingZeros64(m)
			binary.LittleEndian.PutUint64(out[p:p+8:p+8], uint64(first+j)|uint64(bits[j])<<16)
			p += 6
		}
	}
	return p
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

// exactRow writes a row's k entries by ranking every value with magKey
// (which puts NaN last) and selecting with threshold.
func (t *topK) exactRow(out []byte, row []float32, k int) {
	keys := t.keys[:len(row)]
	lo, hi := rowKeys(keys, row)
	thr, above, _ := t.threshold(keys, k, lo, hi)
	t.putKept(out, row, keys, k, thr, above)
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

// putKept writes the k entries kept: those whose key is above thr, and
// the first k−above whose key is thr.
func (t *topK) putKept(out []byte, row []float32, keys []uint32, k int, thr uint32, above int) {
	sel := t.sel[:len(row)]
	keys = keys[:len(row)]
	ties := k - above
	m, eq := 0, 0
	for j, key := range keys {
		sel[m] = int32(j)
		at := b2i(key == thr)
		eq += at
		m += b2i(key > thr) | at&b2i(eq <= ties)
	}
	if len(row) <= 1<<16 {
		for _, j := range sel[:k] {
			o := out[:6]
			binary.LittleEndian.PutUint16(o, uint16(j))
			binary.LittleEndian.PutUint32(o[2:], math.Float32bits(row[j]))
			out = out[6:]
		}
		return
	}
	for _, j := range sel[:k] {
		o := out[:8]
		binary.LittleEndian.PutUint32(o, uint32(j))
		binary.LittleEndian.PutUint32(o[4:], math.Float32bits(row[j]))
		out = out[8:]
	}
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
	k := t.kept(width, ratio)
	ib := indexBytes(width)
	if want := rows * k * (ib + 4); len(src) != want {
		return sizeError("topk", len(src), want)
	}
	clear(out[:rows*width])
	if k == 0 {
		return nil
	}
	for i := range rows {
		row := out[i*width : (i+1)*width]
		msg := src[i*k*(ib+4) : (i+1)*k*(ib+4)]
		for len(msg) >= ib+4 {
			var j int
			if ib == 2 {
				j = int(binary.LittleEndian.Uint16(msg))
			} else {
				j = int(binary.LittleEndian.Uint32(msg))
			}
			if j >= len(row) {
				return fmt.Errorf("compress: topk message names column %d of a %d-wide row", j, width)
			}
			row[j] = math.Float32frombits(binary.LittleEndian.Uint32(msg[ib:]))
			msg = msg[ib+4:]
		}
	}
	return nil
}
