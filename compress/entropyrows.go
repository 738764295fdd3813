package compress

import (
	"encoding/binary"
	mbits "math/bits"
	"slices"
)

// rowLayouter is a codec whose message of rows×width at ratio (in the
// direction backward says) is a prefix of bytes and then rows of one size
// that each start with a header: a quantiser's rows, a scale and an offset
// before the codes. An entropy stage codes each byte of the headers as a
// stream of its own (a float's exponent byte is nearly constant, its low
// mantissa bytes nearly random) and the codes apart from them. rowBytes 0
// says the message has no such layout.
type rowLayouter interface {
	rowLayout(rows, width int, ratio float64, backward bool) (prefix, rowBytes, header int)
}

// rawHeaderer is a rowLayouter whose rows' header bytes at some positions
// (bit j of rawHeader: byte j) are all but random, a float's low mantissa
// bits: an entropy stage sends their streams as they are rather than
// count, tabulate and code them only to find nothing to gain.
type rawHeaderer interface {
	rawHeader(backward bool) uint64
}

// rowLayout is a message's layout (rowLayouter), or none (rowBytes 0).
type rowLayout struct{ prefix, rowBytes, header int }

// layout is the layout of the wrapped codec's n-byte message: none unless
// the codec declares one that n bytes fit.
func (e *Entropy) layout(n, rows, width int, ratio float64, key Key) rowLayout {
	rl, ok := e.Inner.(rowLayouter)
	if !ok {
		return rowLayout{}
	}
	p, rb, h := rl.rowLayout(rows, width, ratio, key.Backward)
	if p < 0 || h <= 0 || rb <= h || n < p || (n-p)%rb != 0 {
		return rowLayout{}
	}
	return rowLayout{p, rb, h}
}

// segments appends the sizes of the streams an n-byte message splits into:
// the prefix, each header byte's stream, the codes; or the message whole.
func (l rowLayout) segments(dst []int, n int) []int {
	if l.rowBytes == 0 {
		return append(dst, n)
	}
	k := (n - l.prefix) / l.rowBytes
	dst = append(dst, l.prefix)
	for range l.header {
		dst = append(dst, k)
	}
	return append(dst, k*(l.rowBytes-l.header))
}

// split appends msg's streams, one after another, to dst: the prefix,
// header byte 0 of every row, header byte 1, …, then every row's codes.
// One pass over the rows writes all the streams.
func (l rowLayout) split(dst, msg []byte) []byte {
	if l.rowBytes == 0 {
		return append(dst, msg...)
	}
	at := len(dst)
	dst = slices.Grow(dst, len(msg))[:at+len(msg)]
	copy(dst[at:], msg[:l.prefix])
	l.gatherRows(dst[at+l.prefix:], msg[l.prefix:])
	return dst
}

// gatherRows writes the streams of the rows of rows to out: header byte 0
// of each, header byte 1, …, then their codes.
func (l rowLayout) gatherRows(out, rows []byte) {
	rb, h, w := l.rowBytes, l.header, l.rowBytes-l.header
	k := len(rows) / rb
	if h == 4 && w <= 16 {
		gatherShortRows(out, rows, k, w)
		return
	}
	codes := out[h*k:]
	for i := range k {
		row := rows[i*rb : (i+1)*rb]
		for c, b := range row[:h] {
			out[c*k+i] = b
		}
		copy(codes[i*w:(i+1)*w], row[h:])
	}
}

// gatherShortRows is gatherRows of k short rows, each a 4-byte header (as
// delta coding's, deltaHeader) and w ≤ 16 bytes of codes, whatever codec's
// layout they are: whole groups of 16 rows by the AVX-512 kernel where the
// CPU has it (streamrows.go), the rest in Go.
func gatherShortRows(out, rows []byte, k, w int) {
	from := 0
	if g := k / 16; shortRowsAsm && g > 0 {
		_, _ = out[4*k+16*g*w-1], rows[16*g*(4+w)-1]
		gatherShortRowsAVX512(&out[0], &rows[0], g, k, w, shortRowsPlans[w])
		from = 16 * g
	}
	gatherShortRowsGo(out, rows, k, w, from)
}

// gatherShortRowsGo is gatherShortRows of rows from, from+1, … of k in Go:
// each row's codes copied as two 8-byte words where both ends have room,
// the bytes past them written over by the next row's.
func gatherShortRowsGo(out, rows []byte, k, w, from int) {
	rb := 4 + w
	s0, s1, s2, s3, codes := out[:k], out[k:2*k], out[2*k:3*k], out[3*k:4*k], out[4*k:]
	for i := from; i < k; i++ {
		if i*rb+20 <= len(rows) && i*w+16 <= len(codes) {
			row := rows[i*rb : i*rb+20]
			v := binary.LittleEndian.Uint32(row)
			s0[i], s1[i], s2[i], s3[i] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			c := codes[i*w : i*w+16]
			binary.LittleEndian.PutUint64(c, binary.LittleEndian.Uint64(row[4:]))
			binary.LittleEndian.PutUint64(c[8:], binary.LittleEndian.Uint64(row[12:]))
			continue
		}
		row := rows[i*rb : (i+1)*rb]
		s0[i], s1[i], s2[i], s3[i] = row[0], row[1], row[2], row[3]
		copy(codes[i*w:(i+1)*w], row[4:])
	}
}

// scatterRows undoes gatherRows, or compact's leaving out the rows zero
// marks if zero is not nil: it writes the rows whose streams are s to
// rows, those zero marks all zeros.
func (l rowLayout) scatterRows(rows, s, zero []byte) {
	rb, h, w := l.rowBytes, l.header, l.rowBytes-l.header
	k, m := len(rows)/rb, len(s)/rb
	if h == 4 && w <= 16 {
		scatterShortRows(rows, s, zero, k, w)
		return
	}
	codes := s[h*m:]
	j := 0
	for i := range k {
		row := rows[i*rb : (i+1)*rb]
		if zero != nil && zero[i/8]>>(i%8)&1 != 0 {
			clear(row)
			continue
		}
		for c := range row[:h] {
			row[c] = s[c*m+j]
		}
		copy(row[h:], codes[j*w:(j+1)*w])
		j++
	}
}

// scatterShortRows is scatterRows of k short rows, each a 4-byte header
// and w ≤ 16 bytes of codes: with no rows left out, whole groups
// of 16 rows by the AVX-512 kernel where the CPU has it
// (streamrows.go), the rest in Go.
func scatterShortRows(rows, s, zero []byte, k, w int) {
	from := 0
	if g := k / 16; zero == nil && shortRowsAsm && g > 0 && len(s) == k*(4+w) {
		_ = rows[16*g*(4+w)-1]
		scatterShortRowsAVX512(&rows[0], &s[0], g, k, w, shortRowsPlans[w])
		from = 16 * g
	}
	scatterShortRowsGo(rows, s, zero, k, w, from)
}

// scatterShortRowsGo is scatterShortRows of rows from, from+1, … of k in
// Go (with no rows left out before from), writing each row as a 4-byte
// header and two 8-byte words of codes where there is room, the bytes
// past it written over by the rows after. A row left out is the next
// row's bytes masked to zeros, so that which rows are left out takes no
// branch.
func scatterShortRowsGo(rows, s, zero []byte, k, w, from int) {
	rb := 4 + w
	m := len(s) / rb
	if m == 0 {
		clear(rows[:k*rb])
		return
	}
	s0, s1, s2, s3, codes := s[:m], s[m:2*m], s[2*m:3*m], s[3*m:4*m], s[4*m:]
	j := from
	for i := from; i < k; i++ {
		if zero != nil && i%8 == 0 && zero[i/8] == 0xff && i+8 <= k {
			clear(rows[i*rb : (i+8)*rb]) // eight rows left out
			i += 7
			continue
		}
		left := 0
		if zero != nil {
			left = int(zero[i/8] >> (i % 8) & 1)
		}
		jj := min(j, m-1) // rows left out after the last row read it again
		if i*rb+20 <= len(rows) && jj*w+16 <= len(codes) {
			keep := uint64(left) - 1 // all ones, or 0 for a row left out
			hdr := uint64(s0[jj]) | uint64(s1[jj])<<8 | uint64(s2[jj])<<16 | uint64(s3[jj])<<24
			c := codes[jj*w : jj*w+16]
			row := rows[i*rb : i*rb+20]
			binary.LittleEndian.PutUint32(row, uint32(hdr&keep))
			binary.LittleEndian.PutUint64(row[4:], binary.LittleEndian.Uint64(c)&keep)
			binary.LittleEndian.PutUint64(row[12:], binary.LittleEndian.Uint64(c[8:])&keep)
		} else if row := rows[i*rb : (i+1)*rb]; left != 0 {
			clear(row)
		} else {
			row[0], row[1], row[2], row[3] = s0[jj], s1[jj], s2[jj], s3[jj]
			copy(row[4:], codes[jj*w:(jj+1)*w])
		}
		j += 1 - left
	}
}

// join undoes split: it writes the message of the streams s to msg, of
// the same size.
func (l rowLayout) join(msg, s []byte) {
	if l.rowBytes == 0 {
		copy(msg, s)
		return
	}
	copy(msg, s[:l.prefix])
	l.scatterRows(msg[l.prefix:], s[l.prefix:], nil)
}

// zeroRows writes to bm ((k+7)/8 bytes) the bitmap of the rows whose
// bytes are all zero (bit i%8 of byte i/8: row i) among the k rows split
// into the streams s (split's, after the prefix), and returns how many
// there are. Eight rows at a time, it finds those whose header bytes are
// all zero from a word of each header stream, and checks their codes.
func (l rowLayout) zeroRows(bm, s []byte, k int) int {
	h, w := l.header, l.rowBytes-l.header
	codes := s[h*k:]
	zeros := 0
	for b := range bm {
		lo := 8 * b
		var cand byte // rows of the eight whose headers are zero
		if lo+8 <= k {
			var or uint64
			for c := range h {
				or |= binary.LittleEndian.Uint64(s[c*k+lo:])
			}
			cand = zeroBytes(or)
		} else {
			for r := range k - lo {
				z := byte(1)
				for c := range h {
					if s[c*k+lo+r] != 0 {
						z = 0
					}
				}
				cand |= z << r
			}
		}
		var bits byte
		for ; cand != 0; cand &= cand - 1 {
			r := mbits.TrailingZeros8(cand)
			if c := codes[(lo+r)*w:]; w <= 16 && len(c) >= 16 {
				lo, hi := codeWords(w)
				if binary.LittleEndian.Uint64(c)&lo|binary.LittleEndian.Uint64(c[8:])&hi == 0 {
					bits |= 1 << r
				}
			} else if allZero(c[:w]) {
				bits |= 1 << r
			}
		}
		bm[b] = bits
		zeros += mbits.OnesCount8(bits)
	}
	return zeros
}

// codeWords is the masks of w ≤ 16 bytes in two little-endian words.
func codeWords(w int) (lo, hi uint64) {
	switch {
	case w < 8:
		return 1<<(8*w) - 1, 0
	case w < 16:
		return ^uint64(0), 1<<(8*(w-8)) - 1
	}
	return ^uint64(0), ^uint64(0)
}

// zeroBytes is the mask of x's zero bytes: bit i for byte i (little-endian).
func zeroBytes(x uint64) byte {
	const low7 = 0x7f7f7f7f7f7f7f7f
	t := ^((x&low7 + low7) | x | low7) // the top bit of each zero byte
	return byte((t >> 7) * 0x0102040810204080 >> 56)
}

// compact appends the streams split made of a message of k rows, s, to
// dst, leaving out the rows zero marks (zeroRows' bitmap), and that
// bitmap after the prefix: the prefix, the bitmap, then header byte 0 of
// every other row, header byte 1, …, then their codes (entropySparse).
// It visits the rows kept, eight rows' bitmap byte at a time.
func (l rowLayout) compact(dst, s, zero []byte, k, zeros int) []byte {
	h, w := l.header, l.rowBytes-l.header
	m := k - zeros
	at := len(dst)
	size := l.prefix + len(zero) + m*l.rowBytes
	dst = slices.Grow(dst, size)[:at+size]
	copy(dst[at:], s[:l.prefix])
	copy(dst[at+l.prefix:], zero)
	out, s := dst[at+l.prefix+len(zero):], s[l.prefix:]
	codes, from := out[h*m:], s[h*k:]
	var o0, o1, o2, o3, s0, s1, s2, s3 []byte // delta coding's four header streams
	if h == deltaHeader {
		o0, o1, o2, o3 = out[:m], out[m:2*m], out[2*m:3*m], out[3*m:4*m]
		s0, s1, s2, s3 = s[:k], s[k:2*k], s[2*k:3*k], s[3*k:4*k]
	}
	j := 0
	for b, z := range zero {
		for keep := ^z; keep != 0; keep &= keep - 1 {
			i := 8*b + mbits.TrailingZeros8(keep)
			if i >= k {
				break
			}
			if h == deltaHeader {
				o0[j], o1[j], o2[j], o3[j] = s0[i], s1[i], s2[i], s3[i]
			} else {
				for c := range h {
					out[c*m+j] = s[c*k+i]
				}
			}
			if w <= 16 && j*w+16 <= len(codes) && i*w+16 <= len(from) {
				c, f := codes[j*w:j*w+16], from[i*w:i*w+16]
				binary.LittleEndian.PutUint64(c, binary.LittleEndian.Uint64(f))
				binary.LittleEndian.PutUint64(c[8:], binary.LittleEndian.Uint64(f[8:]))
			} else {
				copy(codes[j*w:(j+1)*w], from[i*w:(i+1)*w])
			}
			j++
		}
	}
	return dst
}

// sparseSegments appends the sizes of the streams compact makes of a
// message of k rows, zeros of them left out.
func (l rowLayout) sparseSegments(dst []int, k, zeros int) []int {
	m := k - zeros
	dst = append(dst, l.prefix, (k+7)/8)
	for range l.header {
		dst = append(dst, m)
	}
	return append(dst, m*(l.rowBytes-l.header))
}

// joinSparse undoes compact: it writes the message of k rows whose
// streams are s to msg.
func (l rowLayout) joinSparse(msg, s []byte, k int) {
	copy(msg, s[:l.prefix])
	nb := (k + 7) / 8
	l.scatterRows(msg[l.prefix:], s[l.prefix+nb:], s[l.prefix:l.prefix+nb])
}

// zeroRowsIn counts the rows a compact bitmap of k rows marks, or
// returns −1 if it marks any past the k-th.
func zeroRowsIn(bm []byte, k int) int {
	n := 0
	for _, b := range bm {
		n += mbits.OnesCount8(b)
	}
	if k%8 != 0 && len(bm) > 0 && bm[len(bm)-1]>>(k%8) != 0 {
		return -1
	}
	return n
}

// allZero reports whether every byte of b is 0.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}
