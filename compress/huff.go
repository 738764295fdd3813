package compress

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/fse"
	"github.com/klauspost/compress/huff0"
)

// huffCoder codes a block as huff0.Compress4X does, to the same bytes,
// which huff0's decoder reads: huff0 builds and writes the table from a
// histogram, and huffCoder counts the histogram and writes the four
// streams' codes itself, an AVX-512 kernel 64 symbols at a time where the
// CPU has one (huff_amd64.s), a Go loop elsewhere.
type huffCoder struct {
	hs     huff0.Scratch
	fs     fse.Scratch
	tab    huffTable
	weight [256]byte
}

// huffTable is a table's codes: symbol s's code is lo[s] | (hi[s]&7)<<8,
// of hi[s]>>4 bits (0 for a symbol the block does not hold). huff0's
// codes have at most 11 bits.
type huffTable struct {
	lo, hi [256]byte
}

// errHuffTable is an unreadable table, which huff0 never writes.
var errHuffTable = errors.New("compress: huff0 wrote a table it cannot read")

// compress appends the huff0 4-stream coding of src (table, jump table,
// streams) to dst, or returns huff0.ErrUseRLE (one repeated byte) or
// huff0.ErrIncompressible, as huff0.Compress4X would (except for an empty
// src, which the entropy stage never hands it: ErrIncompressible, where
// huff0 says ErrUseRLE), with dst as it was.
// Without the kernel it is huff0.Compress4X, whose Go loop is faster than
// encodeGo.
func (h *huffCoder) compress(dst, src []byte) ([]byte, error) {
	if !huffAsm {
		h.hs.Reuse = huff0.ReusePolicyNone // every block carries its table
		out, _, err := huff0.Compress4X(src, &h.hs)
		if err != nil {
			return dst, err
		}
		return append(dst, out...), nil
	}
	return h.compressWith(dst, src, true)
}

// compressWith is compress with huffCoder's own encoder: the kernel if
// asm, else encodeGo.
func (h *huffCoder) compressWith(dst, src []byte, asm bool) ([]byte, error) {
	n := len(src)
	if n == 0 || n > huff0.BlockSizeMax {
		return dst, huff0.ErrIncompressible
	}
	var count [256]uint32
	most := histogram(&count, src)
	switch {
	case most == n && n > 1:
		return dst, huff0.ErrUseRLE
	case most == n || most == 1 || most < n>>7 || n < 12: // too well spread for Huffman to gain, or too short
		return dst, huff0.ErrIncompressible
	}
	if cap(h.hs.Out) == 0 {
		h.hs.Out = make([]byte, 0, 1024) // AppendTable's scratch, kept
	}
	if err := h.hs.BuildCTable(&count); err != nil {
		return dst, huff0.ErrIncompressible
	}
	at := len(dst)
	dst, err := h.hs.AppendTable(dst)
	if err != nil {
		return dst[:at], huff0.ErrIncompressible
	}
	if err := h.tab.read(dst[at:], &h.fs, &h.weight); err != nil {
		return dst[:at], err
	}
	var total uint64 // the codes' bits
	for s, c := range count {
		total += uint64(c) * uint64(h.tab.hi[s]>>4)
	}
	if len(dst)-at+6+int(total/8) >= n { // no smaller however the streams end
		return dst[:at], huff0.ErrIncompressible
	}
	jump := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	seg := (n + 3) / 4
	for i := range 4 {
		start := len(dst)
		dst = h.tab.encode(dst, src[min(i*seg, n):min((i+1)*seg, n)], asm)
		size := len(dst) - start
		if size > 0xffff {
			return dst[:at], huff0.ErrIncompressible
		}
		if i < 3 {
			binary.LittleEndian.PutUint16(dst[jump+2*i:], uint16(size))
		}
	}
	if len(dst)-at >= n {
		return dst[:at], huff0.ErrIncompressible
	}
	return dst, nil
}

// histogram counts src's bytes into count and returns the largest count,
// eight bytes a word into four tables, so that an increment seldom waits
// for the one before it to the same counter.
func histogram(count *[256]uint32, src []byte) int {
	var c [4][256]uint32
	for ; len(src) >= 8; src = src[8:] {
		v := binary.LittleEndian.Uint64(src)
		c[0][byte(v)]++
		c[1][byte(v>>8)]++
		c[2][byte(v>>16)]++
		c[3][byte(v>>24)]++
		c[0][byte(v>>32)]++
		c[1][byte(v>>40)]++
		c[2][byte(v>>48)]++
		c[3][v>>56]++
	}
	for _, b := range src {
		c[0][b]++
	}
	most := uint32(0)
	for s := range count {
		count[s] = c[0][s] + c[1][s] + c[2][s] + c[3][s]
		most = max(most, count[s])
	}
	return int(most)
}

// read sets t to the codes of the huff0 table at the start of b, as
// huff0.ReadTable derives them from the symbols' weights, weight being
// scratch.
func (t *huffTable) read(b []byte, fs *fse.Scratch, weight *[256]byte) error {
	if len(b) < 2 {
		return errHuffTable
	}
	size := int(b[0])
	var w []byte
	if size >= 128 { // 4-bit weights
		n := size - 127
		if (n+1)/2 > len(b)-1 {
			return errHuffTable
		}
		for i := 0; i < n; i += 2 {
			weight[i], weight[i+1] = b[1+i/2]>>4, b[1+i/2]&15
		}
		w = weight[:n]
	} else { // FSE-coded weights
		if size > len(b)-1 {
			return errHuffTable
		}
		fs.DecompressLimit = 255
		fs.Out = weight[:0]
		var err error
		if w, err = fse.Decompress(b[1:1+size], fs); err != nil || len(w) > 255 {
			return errHuffTable
		}
		fs.Out = nil
	}
	var rank [16]uint32
	total := uint32(0)
	for _, v := range w {
		if v > 11 {
			return errHuffTable
		}
		rank[v]++
		if v > 0 {
			total += 1 << (v - 1)
		}
	}
	if total == 0 {
		return errHuffTable
	}
	// The last symbol's weight is implied: the total must be a power of 2.
	log := uint32(bits.Len32(total)) // the table's log: the codes' longest
	rest := uint32(1)<<log - total
	if rest&(rest-1) != 0 || log > 11 {
		return errHuffTable
	}
	last := byte(bits.Len32(rest))
	w = append(w, last)
	rank[last]++
	var next uint32 // each weight's first slot in the decoder's table
	for v := uint32(1); v <= log; v++ {
		start := next
		next += rank[v] << (v - 1)
		rank[v] = start
	}
	t.lo, t.hi = [256]byte{}, [256]byte{}
	for s, v := range w {
		if v == 0 {
			continue
		}
		val, nb := rank[v]>>(v-1), log+1-uint32(v)
		rank[v] += 1 << v >> 1
		t.lo[s], t.hi[s] = byte(val), byte(val>>8)|byte(nb)<<4
	}
	return nil
}

// encode appends the huff0 stream of src's codes to dst: their bits from
// src's last symbol's to its first's, each code's lowest bit first, then
// a 1 (the decoder reads the stream back from its end), little-endian; by
// the kernel if asm.
func (t *huffTable) encode(dst, src []byte, asm bool) []byte {
	at := len(dst)
	dst = slices.Grow(dst, len(src)*11/8+32)
	if asm && len(src) > 0 {
		n := huffEncodeAVX512(&dst[at:cap(dst)][0], &src[0], len(src), t)
		return dst[:at+n]
	}
	return dst[:at+t.encodeGo(dst[at:cap(dst)], src)]
}

// encodeGo is encode's Go loop, writing into b, which has room for
// len(src)·11/8 + 32 bytes; it returns the stream's size.
func (t *huffTable) encodeGo(b, src []byte) int {
	p, acc, nb := 0, uint64(0), uint(0)
	for i := len(src) - 1; i >= 0; i-- {
		s := src[i]
		acc |= (uint64(t.lo[s]) | uint64(t.hi[s]&7)<<8) << nb
		nb += uint(t.hi[s] >> 4)
		if nb >= 32 {
			binary.LittleEndian.PutUint32(b[p:], uint32(acc))
			p, acc, nb = p+4, acc>>32, nb-32
		}
	}
	acc |= 1 << nb
	nb++
	for ; nb > 0; nb -= min(nb, 8) {
		b[p] = byte(acc)
		p, acc = p+1, acc>>8
	}
	return p
}
