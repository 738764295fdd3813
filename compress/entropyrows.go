package compress

import (
	"encoding/binary"
	"math/bits"
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
	l.gatherRows(dst[at+l.prefix:], msg[l.prefix:], nil)
	return dst
}

// gatherRows writes the streams of the rows of rows to out: header byte 0
// of each, header byte 1, …, then their codes; the rows zero marks (bit
// i%8 of byte i/8: row i), if zero is not nil, left out.
func (l rowLayout) gatherRows(out, rows, zero []byte) {
	rb, h, w := l.rowBytes, l.header, l.rowBytes-l.header
	k, m := len(rows)/rb, len(out)/rb // rows, and rows written
	if h == deltaHeader && w <= 16 && zero == nil {
		gatherDeltaRows(out, rows, k, w)
		return
	}
	codes := out[h*m:]
	j := 0
	for i := range k {
		if zero != nil && zero[i/8]>>(i%8)&1 != 0 {
			continue
		}
		row := rows[i*rb : (i+1)*rb]
		for c, b := range row[:h] {
			out[c*m+j] = b
		}
		copy(codes[j*w:(j+1)*w], row[h:])
		j++
	}
}

// gatherDeltaRows is gatherRows of all k rows of delta coding's 4-byte
// headers and w ≤ 16 bytes of codes: each row's codes copied as two
// 8-byte words, the bytes past them written over by the next row's, but
// for the last rows.
func gatherDeltaRows(out, rows []byte, k, w int) {
	rb := 4 + w
	s0, s1, s2, s3, codes := out[:k], out[k:2*k], out[2*k:3*k], out[3*k:4*k], out[4*k:]
	fast := 0 // rows [0, fast) have 16 bytes to read after their header and to write at their codes
	for fast < k && fast*rb+20 <= len(rows) && fast*w+16 <= len(codes) {
		fast++
	}
	for i := range fast {
		row := rows[i*rb : i*rb+20]
		v := binary.LittleEndian.Uint32(row)
		s0[i], s1[i], s2[i], s3[i] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		c := codes[i*w : i*w+16]
		binary.LittleEndian.PutUint64(c, binary.LittleEndian.Uint64(row[4:]))
		binary.LittleEndian.PutUint64(c[8:], binary.LittleEndian.Uint64(row[12:]))
	}
	for i := fast; i < k; i++ {
		row := rows[i*rb : (i+1)*rb]
		s0[i], s1[i], s2[i], s3[i] = row[0], row[1], row[2], row[3]
		copy(codes[i*w:(i+1)*w], row[4:])
	}
}

// scatterRows undoes gatherRows: it writes the rows whose streams are s
// to rows, those zero marks all zeros.
func (l rowLayout) scatterRows(rows, s, zero []byte) {
	rb, h, w := l.rowBytes, l.header, l.rowBytes-l.header
	k, m := len(rows)/rb, len(s)/rb
	if h == deltaHeader && w <= 16 && zero == nil {
		scatterDeltaRows(rows, s, k, w)
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

// scatterDeltaRows undoes gatherDeltaRows, writing each row's codes as
// two 8-byte words, the bytes past them written over by the rows after,
// but for the last rows.
func scatterDeltaRows(rows, s []byte, k, w int) {
	rb := 4 + w
	s0, s1, s2, s3, codes := s[:k], s[k:2*k], s[2*k:3*k], s[3*k:4*k], s[4*k:]
	fast := 0
	for fast < k && fast*rb+20 <= len(rows) && fast*w+16 <= len(codes) {
		fast++
	}
	for i := range fast {
		row := rows[i*rb : i*rb+20]
		binary.LittleEndian.PutUint32(row, uint32(s0[i])|uint32(s1[i])<<8|uint32(s2[i])<<16|uint32(s3[i])<<24)
		c := codes[i*w : i*w+16]
		binary.LittleEndian.PutUint64(row[4:], binary.LittleEndian.Uint64(c))
		binary.LittleEndian.PutUint64(row[12:], binary.LittleEndian.Uint64(c[8:]))
	}
	for i := fast; i < k; i++ {
		row := rows[i*rb : (i+1)*rb]
		row[0], row[1], row[2], row[3] = s0[i], s1[i], s2[i], s3[i]
		copy(row[4:], codes[i*w:(i+1)*w])
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

// splitSparse is split leaving out the rows whose bytes are all zero
// (the gradients of rows far from the training nodes, say): it appends
// the prefix, a bitmap of the k rows (bit i%8 of byte i/8 set where row i
// is all zero), then header byte 0 of every other row, header byte 1, …,
// then their codes. Where leaving rows out saves fewer bytes than the
// bitmap takes it appends split's streams instead, and reports 0 rows
// left out.
func (l rowLayout) splitSparse(dst, msg []byte) ([]byte, int) {
	if l.rowBytes == 0 {
		return l.split(dst, msg), 0
	}
	at, rows := len(dst), msg[l.prefix:]
	rb := l.rowBytes
	k := len(rows) / rb
	zeros := 0
	for i := range k {
		if rows[i*rb] == 0 && allZero(rows[i*rb:(i+1)*rb]) {
			zeros++
		}
	}
	nb := (k + 7) / 8
	if zeros*rb <= nb {
		return l.split(dst, msg), 0
	}
	m := k - zeros
	dst = slices.Grow(dst, l.prefix+nb+m*rb)[:at+l.prefix+nb+m*rb]
	copy(dst[at:], msg[:l.prefix])
	bm := dst[at+l.prefix : at+l.prefix+nb]
	clear(bm)
	for i := range k {
		if rows[i*rb] == 0 && allZero(rows[i*rb:(i+1)*rb]) {
			bm[i/8] |= 1 << (i % 8)
		}
	}
	l.gatherRows(dst[at+l.prefix+nb:], rows, bm)
	return dst, zeros
}

// sparseSegments appends the sizes of the streams splitSparse makes of an
// n-byte message of k rows, zeros of them left out.
func (l rowLayout) sparseSegments(dst []int, k, zeros int) []int {
	m := k - zeros
	dst = append(dst, l.prefix, (k+7)/8)
	for range l.header {
		dst = append(dst, m)
	}
	return append(dst, m*(l.rowBytes-l.header))
}

// joinSparse undoes splitSparse: it writes the message of k rows whose
// streams are s to msg.
func (l rowLayout) joinSparse(msg, s []byte, k int) {
	copy(msg, s[:l.prefix])
	nb := (k + 7) / 8
	l.scatterRows(msg[l.prefix:], s[l.prefix+nb:], s[l.prefix:l.prefix+nb])
}

// zeroRowsIn counts the rows a splitSparse bitmap of k rows marks, or
// returns −1 if it marks any past the k-th.
func zeroRowsIn(bm []byte, k int) int {
	n := 0
	for _, b := range bm {
		n += bits.OnesCount8(b)
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
