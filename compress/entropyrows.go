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
	out, rows := dst[at+l.prefix:], msg[l.prefix:]
	copy(dst[at:], msg[:l.prefix])
	k, h, w := len(rows)/l.rowBytes, l.header, l.rowBytes-l.header
	codes := out[h*k:]
	if h == deltaHeader {
		s0, s1, s2, s3 := out[:k], out[k:2*k], out[2*k:3*k], out[3*k:4*k]
		for i := range k {
			row := rows[i*l.rowBytes : (i+1)*l.rowBytes]
			s0[i], s1[i], s2[i], s3[i] = row[0], row[1], row[2], row[3]
			copy(codes[i*w:(i+1)*w], row[h:])
		}
		return dst
	}
	for i := range k {
		row := rows[i*l.rowBytes : (i+1)*l.rowBytes]
		for j, b := range row[:h] {
			out[j*k+i] = b
		}
		copy(codes[i*w:(i+1)*w], row[h:])
	}
	return dst
}

// join undoes split: it writes the message of the streams s to msg, of
// the same size.
func (l rowLayout) join(msg, s []byte) {
	if l.rowBytes == 0 {
		copy(msg, s)
		return
	}
	copy(msg, s[:l.prefix])
	rows, s := msg[l.prefix:], s[l.prefix:]
	k, h, w := len(rows)/l.rowBytes, l.header, l.rowBytes-l.header
	codes := s[h*k:]
	if h == deltaHeader {
		s0, s1, s2, s3 := s[:k], s[k:2*k], s[2*k:3*k], s[3*k:4*k]
		for i := range k {
			row := rows[i*l.rowBytes : (i+1)*l.rowBytes]
			row[0], row[1], row[2], row[3] = s0[i], s1[i], s2[i], s3[i]
			copy(row[h:], codes[i*w:(i+1)*w])
		}
		return
	}
	for i := range k {
		row := rows[i*l.rowBytes : (i+1)*l.rowBytes]
		for j := range row[:h] {
			row[j] = s[j*k+i]
		}
		copy(row[h:], codes[i*w:(i+1)*w])
	}
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
	k, h, w := len(rows)/l.rowBytes, l.header, l.rowBytes-l.header
	nb := (k + 7) / 8
	dst = slices.Grow(dst, l.prefix+nb)[:at+l.prefix+nb]
	copy(dst[at:], msg[:l.prefix])
	bm := dst[at+l.prefix:]
	clear(bm)
	zeros := 0
	for i := range k {
		if allZero(rows[i*l.rowBytes : (i+1)*l.rowBytes]) {
			bm[i/8] |= 1 << (i % 8)
			zeros++
		}
	}
	if zeros*l.rowBytes <= nb {
		return l.split(dst[:at], msg), 0
	}
	m := k - zeros
	start := len(dst)
	dst = slices.Grow(dst, m*l.rowBytes)[:start+m*l.rowBytes]
	out := dst[start:]
	codes := out[h*m:]
	j := 0
	for i := range k {
		if bm[i/8]>>(i%8)&1 != 0 {
			continue
		}
		row := rows[i*l.rowBytes : (i+1)*l.rowBytes]
		for c, b := range row[:h] {
			out[c*m+j] = b
		}
		copy(codes[j*w:(j+1)*w], row[h:])
		j++
	}
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
	rows, s := msg[l.prefix:], s[l.prefix:]
	nb := (k + 7) / 8
	bm, s := s[:nb], s[nb:]
	h, w := l.header, l.rowBytes-l.header
	m := (len(s)) / l.rowBytes
	codes := s[h*m:]
	j := 0
	for i := range k {
		row := rows[i*l.rowBytes : (i+1)*l.rowBytes]
		if bm[i/8]>>(i%8)&1 != 0 {
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
